"""Recorded essay downloads made from the pinned corpus at test time (no essay text is stored in
the repository): each .txt file is its slice of the corpus, and for a few paulgraham.com pages
an HTML page whose conversion (upstream's: unicode_escape, the first <font>, html2text) gives
back exactly the slice. Such a page is built by undoing what html2text does to plain text: line
breaks "  \\n" are <br>, wrapped lines are joined (html2text wraps them again at 78 columns),
two spaces keep apart as two data chunks, and characters beyond Latin-1 are \\u escapes (read by
the unicode_escape codec). That is not an inverse of html2text in general: PAGES_THAT_ROUND_TRIP
are pages it holds for (tests/builder/test_essay_fetch.py checks each)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from helpers.paths import SOURCES
from ruler.catalog.essay_list import Essay, pinned_essays

PAGES_THAT_ROUND_TRIP = ("95.html", "alien.html", "ds.html", "mac.html", "superlinear.html")


@lru_cache(maxsize=1)
def pinned_texts() -> dict[str, str]:
    """Each essay's text in the pinned corpus, by name, from the list's lengths."""
    text = json.loads((SOURCES / "essays/PaulGrahamEssays.json").read_text("utf-8"))["text"]
    out, pos = {}, 0
    for essay in pinned_essays():
        out[essay.name] = text[pos:pos + essay.chars]
        pos += essay.chars
    assert pos == len(text)
    return out


def page_for(text: str) -> bytes:
    """An HTML page whose <font> converts back to `text` (for PAGES_THAT_ROUND_TRIP)."""
    assert text.endswith("\n\n")  # html2text ends its output so
    body = text[:-1].replace("  \n", "\0")  # \0: a <br> to be
    body = re.sub(r"(?<=\w-)\n(?=\w)", "", body)  # html2text broke the line after a hyphen
    body = html.escape(body.replace("\n", " "), quote=False)
    body = re.sub(r"(?<=\S) {2}(?=\S)", " <!----> ", body).replace("\0", "<br>")
    page = ("<html><body><table><tr><td><img src=x.gif><font size=2 face=verdana>"
            f"{body}</font></td></tr></table><font>a second font</font></body></html>")
    escaped = "".join(c if ord(c) < 256 and c != "\\" else
                      ("\\\\" if c == "\\" else f"\\u{ord(c):04x}") for c in page)
    return escaped.encode("latin-1")


def write_mirror(root: Path, essays: tuple[Essay, ...], pages: dict[str, bytes]) -> None:
    """Each essay's page at host/path below `root` (the layout `--mirror` reads)."""
    for essay in essays:
        if essay.name in pages:
            path = root / essay.url.split("://", 1)[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pages[essay.name])


@contextmanager
def serve_folder(root: Path) -> Iterator[str]:
    """A loopback HTTP server over `root`; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
