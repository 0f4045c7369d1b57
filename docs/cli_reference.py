"""Write `docs/cli.md`, the command-line reference, from `ruler`'s own parser.

Walks `ruler.commands.main.make_parser()`: every command and sub-command with its description, its
argument groups and each argument's flags, metavar, choices, default and help, as `--help`
expands them, so the page says what the installed command does and nothing else.
tests/package/test_docs.py fails when the committed page differs from what this writes.

    python docs/cli_reference.py            # (re)write docs/cli.md
    python docs/cli_reference.py --check    # exit 1, saying so, if docs/cli.md is stale

Rendered as Markdown rather than as `--help`'s own text, so the page does not change with the
terminal's width or with argparse's layout across Python versions. Run it in a fresh process:
a backend or task family registered in the calling process would appear on the page (installed
plug-ins are not read).
"""

from __future__ import annotations

import argparse
import difflib
import html
import os
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "cli.md"
#: What `--help` wraps descriptions and epilogs at here: the page's width, not the terminal's.
WIDTH = 100

_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]])")


def _escape(text: str) -> str:
    """Help text as Markdown that shows it literally (`<tokenizer>` is no HTML tag)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def _block(parser: argparse.ArgumentParser, text: str | None) -> list[str]:
    """A description or epilog as `--help` lays it out (raw or refilled, by the parser's own
    formatter class), in a text block."""
    if not text:
        return []
    formatter = parser.formatter_class(prog=parser.prog, width=WIDTH)
    formatter.add_text(text)
    body = formatter.format_help().strip("\n")
    return ["```text", body, "```", ""]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _arguments(action: argparse.Action) -> str:
    """What follows the flag: `M`, `[M]`, `[M ...]`, `M [M ...]` or N times `M`."""
    metavar, nargs = _metavar(action), action.nargs
    if nargs is None:
        return metavar
    if nargs == argparse.OPTIONAL:
        return f"[{metavar}]"
    if nargs == argparse.ZERO_OR_MORE:
        return f"[{metavar} ...]"
    if nargs == argparse.ONE_OR_MORE:
        return f"{metavar} [{metavar} ...]"
    if isinstance(nargs, int):
        return " ".join([metavar] * nargs)
    return metavar


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        return _arguments(action)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    return ", ".join(f"{flag} {_arguments(action)}" for flag in action.option_strings)


def _help(action: argparse.Action, prog: str) -> str:
    """The help string with its `%(default)s`, `%(choices)s`, ... filled in as argparse does."""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    for key, value in list(params.items()):
        if hasattr(value, "__name__"):
            params[key] = value.__name__
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return " ".join((action.help % params).split())


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _anchor(prog: str) -> str:
    return prog.replace(" ", "-")


def _command(parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} {parser.prog}", ""]
    lines += _block(parser, parser.description)
    subs = _subcommands(parser)
    for group in parser._action_groups:
        shown = [a for a in group._group_actions
                 if a.help is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
                 and a is not subs]
        if not shown:
            continue
        lines += [f"**{_escape(group.title or '')}**", ""]
        if group.description:
            lines += [_escape(" ".join(group.description.split())), ""]
        for action in shown:
            text = _help(action, parser.prog) if action.help else ""
            item = f"- `{_invocation(action)}`"
            lines.append(f"{item}: {_escape(text)}" if text else item)
        lines.append("")
    if subs is not None:
        helps = {a.dest: a.help for a in subs._choices_actions}
        lines += ["**commands**", ""]
        for name, sub in subs.choices.items():
            summary = f": {_escape(helps[name])}" if helps.get(name) else ""
            lines.append(f"- [`{sub.prog}`](#{_anchor(sub.prog)}){summary}")
        lines.append("")
    lines += _block(parser, parser.epilog)
    if subs is not None:
        for sub in subs.choices.values():
            lines += _command(sub, level + 1)
    return lines


#: Variables that move the defaults the help shows (the user cache, where sources are found):
#: the page shows the defaults of a user who set none of them, whoever runs this.
_USER_SPECIFIC = ("RULER_CACHE", "XDG_CACHE_HOME", "RULER_SOURCES", "RULER_TOKENIZERS",
                  "RULER_TOKENIZER_CACHE")


def render() -> str:
    for name in _USER_SPECIFIC:
        os.environ.pop(name, None)
    os.environ["XDG_CACHE_HOME"] = "~/.cache"  # the user cache as ~/.cache/ruler, not this home's
    from ruler.commands.main import make_parser
    from ruler.kernel.registry import ignore_installed_plugins

    ignore_installed_plugins()  # the page is ruler's own commands, whatever is installed here

    head = ["# Command-line reference", "",
            "Every `ruler` command and flag, generated from the command's own parser by "
            "`python docs/cli_reference.py` (do not edit: run it again). `ruler COMMAND --help` "
            "prints the same.", ""]
    return "\n".join(head + _command(make_parser(), 2)).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    page = render()
    if check:
        old = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if old != page:
            diff = difflib.unified_diff(old.splitlines(), page.splitlines(), "committed",
                                        "generated", lineterm="", n=0)
            print(f"{PAGE} is stale: run python docs/cli_reference.py", *list(diff)[:30],
                  sep="\n", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
