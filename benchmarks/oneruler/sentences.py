"""The sentences of a ONERULER book: the haystack's units.

Upstream splits a book with stanza's `tokenize` pipeline, whose models `stanza.download`
fetches at run time (unpinned; a failed download silently switches to a regex that finds one
sentence in zh and ja). Here the splitter is `sentencex` (pip-installable, rule-based, no
download, deterministic; its version is part of a build's identity), for the 24 languages
stanza has models for; sw and st, which stanza lacks, are split by upstream's own fallback
regex, exactly as upstream splits them. Each sentence is stripped, as upstream strips stanza's.

sentencex holds a quotation open until it closes, so where a book opens a quote it never
closes (Don Quixote's `»` that continues a speech into the next paragraph, the Dutch diary's
`‘`, Kokoro's `「`) one "sentence" runs on for up to 248,697 characters (73,000 tokens). The
haystack is the book's first n whole sentences, so a row whose length falls inside one stops
short (es at 32000: 2,162 tokens), and needles, which go between sentences, cannot land
inside it. So a segment longer than its language's `MAX_SEGMENT_CHARS` is cut where its
sentences end, and any piece still too long at its clauses, commas or spaces
(`ruler.benchmarks.oneruler.long_segments.bounded`): every haystack sentence then holds at most
about 1,000 tokens of llama-3.1 and qwen2.5 (the segment check in
tests/builder/tasks/test_oneruler_sentences.py measures every book), and a book whose
segments are all within the limit is split exactly as the splitter splits it.
"""

from __future__ import annotations

import re
from typing import Iterable

from ruler.benchmarks.oneruler.languages import REGEX_SPLIT
from ruler.benchmarks.oneruler.long_segments import bounded
from ruler.kernel.errors import RulerError

#: Upstream's fallback split (`re.split(r'(?<=[?.!])\s+', book.strip())`).
_FALLBACK = re.compile(r"(?<=[?.!])\s+")

#: What splits each language's book: "sentencex" or "regex" (for the card).
SPLITTER = {"regex": "upstream's fallback regex `(?<=[?.!])\\s+` (stanza has no model)",
            "sentencex": "sentencex (rule-based; upstream: stanza's downloaded model)"}

#: The most tokens a haystack sentence should hold (llama-3.1 and qwen2.5, the tokenizers
#: the segment check measures).
SEGMENT_TOKENS = 1000

#: The longest segment, in characters, a language's haystack keeps whole: SEGMENT_TOKENS at
#: the book's density, the more token-hungry of llama-3.1 and qwen2.5 over the whole book
#: (tokens per character: en 0.236, de 0.293, cs 0.459, fa 0.578, ko 0.717, zh 0.893, hi
#: 0.929, ta 1.341), rounded down to a hundred. Characters, not tokens: a book's sentences
#: are the same for every tokenizer. Data, not computed at build time: changing a value
#: changes the language's rows (the segment check and the golden hashes say which).
MAX_SEGMENT_CHARS = {
    "cs": 2100, "da": 2800, "de": 3400, "en": 4200, "es": 3300, "fa": 1700, "fi": 2400,
    "fr": 3300, "hi": 1000, "hu": 2400, "it": 3100, "ja": 1400, "ko": 1300, "nl": 3200,
    "no": 3000, "pl": 2500, "pt": 3300, "ru": 2700, "sr": 1900, "st": 2500, "sv": 2800,
    "sw": 2400, "ta": 700, "uk": 1900, "vi": 3300, "zh": 1100,
}


def splitter_of(lang: str) -> str:
    return "regex" if lang in REGEX_SPLIT else "sentencex"


def splitter_sentences(lang: str, book: str) -> tuple[str, ...]:
    """The book's sentences as the splitter alone gives them, stripped, in order."""
    if splitter_of(lang) == "regex":
        return tuple(s.strip() for s in _FALLBACK.split(book.strip()))
    try:
        import sentencex
    except ImportError:
        raise RulerError("ONERULER splits books into sentences with sentencex: pip install "
                         "sentencex (the version pinned in constraints.txt)") from None
    return tuple(s.strip() for s in sentencex.segment(lang, book))


def split_sentences(lang: str, book: str) -> tuple[str, ...]:
    """The haystack's sentences: the splitter's, each longer than the language's
    `MAX_SEGMENT_CHARS` cut where its sentences (then clauses) end (`bounded_segments`)."""
    return bounded_segments(lang, splitter_sentences(lang, book))


def bounded_segments(lang: str, segments: Iterable[str]) -> tuple[str, ...]:
    """`segments` with each one longer than the language's `MAX_SEGMENT_CHARS` cut at the
    boundaries a reader accepts (`long_segments.bounded`); the others as they are."""
    limit = MAX_SEGMENT_CHARS[lang]
    return tuple(piece for segment in segments for piece in bounded(segment, limit))
