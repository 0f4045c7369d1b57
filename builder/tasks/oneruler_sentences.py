"""The sentences of a ONERULER book: the haystack's units.

Upstream splits a book with stanza's `tokenize` pipeline, whose models `stanza.download`
fetches at run time (unpinned; a failed download silently switches to a regex that finds one
sentence in zh and ja). Here the splitter is `sentencex` (pip-installable, rule-based, no
download, deterministic; its version is part of a build's identity), for the 24 languages
stanza has models for; sw and st, which stanza lacks, are split by upstream's own fallback
regex, exactly as upstream splits them. Each sentence is stripped, as upstream strips stanza's.
"""

from __future__ import annotations

import re

from ruler.builder.errors import RulerError
from ruler.builder.tasks.oneruler_languages import REGEX_SPLIT

#: Upstream's fallback split (`re.split(r'(?<=[?.!])\s+', book.strip())`).
_FALLBACK = re.compile(r"(?<=[?.!])\s+")

#: What splits each language's book: "sentencex" or "regex" (for the card).
SPLITTER = {"regex": "upstream's fallback regex `(?<=[?.!])\\s+` (stanza has no model)",
            "sentencex": "sentencex (rule-based; upstream: stanza's downloaded model)"}


def splitter_of(lang: str) -> str:
    return "regex" if lang in REGEX_SPLIT else "sentencex"


def split_sentences(lang: str, book: str) -> tuple[str, ...]:
    """The book's sentences, stripped, in order."""
    if splitter_of(lang) == "regex":
        return tuple(s.strip() for s in _FALLBACK.split(book.strip()))
    try:
        import sentencex
    except ImportError:
        raise RulerError("ONERULER splits books into sentences with sentencex: pip install "
                         "sentencex (the version pinned in constraints.txt)") from None
    return tuple(s.strip() for s in sentencex.segment(lang, book))
