"""`ruler` command line: build, sources, verify, release, eval, score, report, export.

Each command module exposes `register_cli(subparsers)`, which adds its sub-commands with
`set_defaults(func=handler)`; a handler takes the parsed args and returns an exit code.
Modules are imported only to register, never to run heavy imports (vLLM, torch) at start-up.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ruler.builder.errors import RulerError

#: Modules that contribute sub-commands, in the order `--help` lists them.
COMMAND_MODULES = (
    "ruler.builder.cli_build",
    "ruler.builder.cli_merge",
    "ruler.builder.cli_sources",
    "ruler.builder.verify.cli",
    "ruler.release",
    "ruler.eval.cli",
    "ruler.eval.integrations.cli",
)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ruler",
        description="Build, verify, release and evaluate the RULER long-context benchmark "
                    "as deterministic, tokenizer-exact Parquet splits.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        importlib.import_module(module).register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ruler.builder.scrub import scrub, scrubbed_output

    args = make_parser().parse_args(argv)
    # Commands print server text (Hub file names, URLs in huggingface_hub's retry warnings,
    # an inference server's errors): no credential is ever shown, on stdout or stderr.
    with scrubbed_output():
        try:
            return int(args.func(args) or 0)
        except RulerError as e:
            print(f"ruler: error: {scrub(str(e))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("ruler: interrupted", file=sys.stderr)
            return 130


if __name__ == "__main__":
    sys.exit(main())
