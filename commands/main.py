"""`ruler` command line: build, sources, verify, release, eval, score, report, export.

Each command module exposes `register_cli(subparsers)`, which adds its sub-commands with
`set_defaults(func=handler)`; a handler takes the parsed args and returns an exit code.
Modules are imported only to register, never to run heavy imports (vLLM, torch) at start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys

from ruler.kernel.errors import RulerError

#: Modules that contribute sub-commands, in the order `--help` lists them.
COMMAND_MODULES = (
    "ruler.commands.build",
    "ruler.commands.merge",
    "ruler.commands.sources",
    "ruler.commands.verify",
    "ruler.release",
    "ruler.commands.eval",
    "ruler.eval.integrations.exporters",
)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ruler",
        description="Build, verify, release and evaluate the RULER long-context benchmark "
                    "as deterministic, tokenizer-exact Parquet splits.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        importlib.import_module(module).register_cli(sub)
    return parser


class _Version(argparse.Action):
    """`ruler --version`: the versions are read when asked for, not each time a parser is
    made."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print ruler's version and those of the packages that shape the rows "
                      "(recorded in every build), and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ruler.builder import __version__
        from ruler.builder.packages import version_text

        print(version_text(__version__))
        parser.exit()


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """`parser.parse_args(argv)`, except that an unknown flag is reported by the sub-command
    it was given to, with that command's usage: argparse hands a sub-command's unknown
    arguments up to the top-level parser, whose usage says nothing about the command."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _command_parser(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost sub-command parser `args` was parsed by."""
    while True:
        subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                    None)
        chosen = subs.choices.get(getattr(args, subs.dest, None) or "") if subs else None
        if chosen is None:
            return parser
        parser = chosen


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread of a command that asks for it
    (`set_defaults(interrupt_on_sigterm=True)`, as `build` does): it stops as on Ctrl-C (its
    workers stopped, its temporary files removed), where the default action would end it on
    the spot and leave both behind. Other commands keep the default action."""


def _terminate(signum, frame) -> None:
    if os.getpid() != _main_pid:  # a forked child that inherited the handler: default action
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    signal.signal(signum, signal.SIG_DFL)  # a second SIGTERM ends the process outright
    raise Terminated()


_main_pid = os.getpid()


def main(argv: list[str] | None = None) -> int:
    global _main_pid
    from ruler.kernel.scrub import scrub, scrubbed_output

    args = parse(make_parser(), argv)
    _main_pid, installed = os.getpid(), False
    if getattr(args, "interrupt_on_sigterm", False):
        with contextlib.suppress(ValueError):  # not the main thread: signals are not ours
            previous = signal.signal(signal.SIGTERM, _terminate)
            installed = True
    # Commands print server text (Hub file names, URLs in huggingface_hub's retry warnings,
    # an inference server's errors): no credential is ever shown, on stdout or stderr.
    with scrubbed_output():
        try:
            return int(args.func(args) or 0)
        except RulerError as e:
            print(f"ruler: error: {scrub(str(e))}", file=sys.stderr)
            return 2
        except OSError as e:  # a full disk, a read-only folder: every command writes through
            from ruler.kernel.atomic import STORAGE_ERRORS, storage_message

            if e.errno not in STORAGE_ERRORS:
                raise
            print(f"ruler: error: {scrub(storage_message(e))}", file=sys.stderr)
            return 2
        except Terminated:
            print("ruler: terminated", file=sys.stderr)
            return 128 + signal.SIGTERM
        except KeyboardInterrupt:
            print("ruler: interrupted", file=sys.stderr)
            return 130
        finally:
            if installed:
                signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


if __name__ == "__main__":
    sys.exit(main())
