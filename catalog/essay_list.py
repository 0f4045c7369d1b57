"""The essays RULER's scraper downloads, and what each one is in the pinned corpus.

Upstream (`scripts/data/synthetic/json/download_paulgraham_essay.py`) downloads the URLs of
`PaulGrahamEssays_URLs.txt`, saves each essay as `<name>.txt` in one folder per kind (the
needle-in-a-haystack repo's .txt files, the converted paulgraham.com pages) and joins the files
of the first folder, then of the second, each in sorted file-name order. `essay_list.json` holds
those URLs in that order with the length and sha256 of each essay's text in the pinned corpus,
so a download can say which essays differ without having the pinned file.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

LIST_PATH = Path(__file__).with_name("essay_list.json")


@dataclass(frozen=True)
class Essay:
    """One URL of the list and its text's length and sha256 (UTF-8) in the pinned corpus."""

    url: str
    chars: int
    sha256: str

    @property
    def name(self) -> str:
        """The page's file name (`avg.txt`, `13sentences.html`): how the fetch names it."""
        return urlsplit(self.url).path.rsplit("/", 1)[-1]

    @property
    def is_page(self) -> bool:
        """A paulgraham.com page, converted from HTML (the others are plain text files)."""
        return ".html" in self.url  # upstream's own test

    @property
    def saved_name(self) -> str:
        """The file name upstream's script saves the text under (its sort key)."""
        return self.name.replace(".html", ".txt") if self.is_page else self.name


def corpus_order(essays: list[Essay] | tuple[Essay, ...]) -> list[Essay]:
    """Upstream's order: the .txt files sorted by name, then the converted pages sorted by the
    name they are saved under."""
    return sorted(essays, key=lambda e: (e.is_page, e.saved_name))


@functools.lru_cache(maxsize=1)
def pinned_essays() -> tuple[Essay, ...]:
    """The list upstream downloads, in corpus order, with the pinned corpus's lengths and hashes."""
    entries = json.loads(LIST_PATH.read_text(encoding="utf-8"))["essays"]
    return tuple(Essay(e["url"], e["chars"], e["sha256"]) for e in entries)
