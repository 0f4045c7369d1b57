"""`ruler export FRAMEWORK`: a build's tasks in another framework's format, one exporter each.

An `Exporter` is a sub-command of `ruler export`, an entry of `EXPORTERS`: ruler's (`lm-eval`,
`kvpress`, in `ruler.eval.integrations.exports`) are listed by address; a plug-in offers one in
entry point group `ruler.exporters` (`name = "pkg.module:EXPORTER"`). Building the parser
imports every exporter's module: keep them to their options and `run`, importing the framework
only in `run`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from ruler.kernel.flags import add_flags, from_flags
from ruler.kernel.registry import Registry


@dataclass(frozen=True)
class Exporter:
    """One `ruler export` target.

    Attributes:
        name: the sub-command (`ruler export NAME`).
        help: one line for `ruler export --help`.
        description, epilog: its own `--help` text (printed as written: line breaks kept).
        options: the dataclass of its options, whose fields declare its flags.
        run: `run(options)`: does the export and returns the exit code.
    """

    name: str
    help: str
    options: type
    run: Callable[[Any], int]
    description: str | None = None
    epilog: str | None = None


#: Every exporter, in `ruler export --help`'s order: ruler's, then a plug-in's.
EXPORTERS: Registry[Exporter] = Registry(
    "exporter", "ruler.exporters", accepts=lambda obj: isinstance(obj, Exporter),
    name_of=lambda e: e.name)
EXPORTERS.register_lazy("lm-eval", "ruler.eval.integrations.exports:LM_EVAL")
EXPORTERS.register_lazy("kvpress", "ruler.eval.integrations.exports:KVPRESS")


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="write task files for other evaluation frameworks "
                       f"({', '.join(EXPORTERS)})",
        description="Write a build's tasks in another framework's format.")
    targets = p.add_subparsers(dest="target", metavar="FRAMEWORK")
    targets.required = True
    for exporter in EXPORTERS.values():
        if EXPORTERS.from_plugin(exporter.name) and not _makes_a_parser(exporter):
            continue
        parser = targets.add_parser(exporter.name, help=exporter.help,
                                    description=exporter.description, epilog=exporter.epilog,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        add_flags(parser, exporter.options)
        parser.set_defaults(func=_runner(exporter))


def _makes_a_parser(exporter: Exporter) -> bool:
    """Whether a plug-in's exporter makes a command line (its options a dataclass of flags):
    one that does not is left out with a warning, and `ruler export` works on without it."""
    try:
        add_flags(argparse.ArgumentParser(add_help=False), exporter.options)
        return True
    except Exception as e:  # a plug-in's own code
        EXPORTERS.leave_out(exporter.name, f"its options make no command line "
                                           f"({type(e).__name__}: {e})")
        return False


def _runner(exporter: Exporter) -> Callable[[argparse.Namespace], int]:
    return lambda args: exporter.run(from_flags(exporter.options, args))
