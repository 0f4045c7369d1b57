"""Rendering the Markdown the project writes, as GitHub and the Hub do (CommonMark with tables
and strikethrough, raw HTML passed through), to check that user-supplied strings in it show as
exactly themselves and shift no table cell."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

from ruler.kernel.markup import visible

#: Names as an attacker (or a careless folder name) writes them: table pipes, a newline that
#: would start a heading, HTML, emphasis, a link, math, a code span, an entity, a list start.
HOSTILE = ("x|y\n# <script>alert(1)</script> *b* _i_ `c` [l](http://e.org) $m$ ~~s~~ &amp; "
           "<b>bold</b>\u202eevil")
HOSTILE_LEADING = "1. -leading\r\n| cell |"

_PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
# a table row's cell separators: `|` not escaped by a backslash
_SEPARATOR = re.compile(r"(?<!\\)\|")


def render(markdown: str) -> BeautifulSoup:
    return BeautifulSoup(_PARSER.render(markdown), "html.parser")


def shown(markdown: str) -> str:
    """The text a reader sees, whitespace collapsed."""
    return " ".join(render(markdown).get_text().split())


def injected_tags(markdown: str) -> list[str]:
    """Elements HOSTILE's parts would make if they were not escaped."""
    soup = render(markdown)
    made = soup.find_all(["script", "b"]) + soup.find_all("a", href="http://e.org")
    made += [t for t in soup.find_all(["em", "strong"]) if t.get_text() in ("b", "i")]
    made += [t for t in soup.find_all(["s", "del"]) if t.get_text() == "s"]
    made += [t for t in soup.find_all("code") if t.get_text() == "c"]
    return [str(t) for t in made]


def table_shapes(markdown: str) -> list[tuple[int, list[int]]]:
    """Per Markdown table (line number of its header): the header's cell count and every
    other row's count, counted on the source lines as GitHub splits them."""
    lines = markdown.splitlines()
    tables, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(
                r"\|(?:\s*:?-{3,}:?\s*\|)+", lines[i + 1].strip()):
            header = _cells(lines[i])
            body, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                body.append(_cells(lines[j]))
                j += 1
            tables.append((header, body))
            i = j
        else:
            i += 1
    return [(h, b) for h, b in tables]


def _cells(line: str) -> int:
    return len(_SEPARATOR.split(line.strip())) - 2


def check_markdown(markdown: str, *names: str) -> None:
    """Every `names` shows as itself (its invisible characters as escapes), nothing of them
    became an element, and every table row has its header's cells."""
    text = shown(markdown)
    for name in names:
        expected = " ".join(visible(name).split())
        assert expected in text, f"{expected!r} not shown as itself in:\n{markdown}"
    assert not injected_tags(markdown), injected_tags(markdown)
    for header, body in table_shapes(markdown):
        assert all(n == header for n in body), (header, body, markdown)
