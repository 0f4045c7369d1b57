"""Cut an over-long text segment at the boundaries a reader would accept: a pure function of
the text and a character limit.

A sentence splitter that holds a quotation open until it closes (sentencex) returns one
"sentence" of tens of thousands of characters wherever a book opens a quote it never closes
(a continued paragraph's `»`, a diary's `‘`, a Japanese `「`). `bounded(text, limit)` gives
such a segment back as pieces of at most `limit` characters wherever the text allows, cut
only where a sentence or a clause ends, never inside a word:

1. at every sentence end inside it: `. ! ? … । ॥ ؟ ۔`, then any closing quotes or brackets,
   then whitespace before a character that is not a lower-case letter (`etc. and` stays
   whole); or `。！？` and closing marks, with or without whitespace after (Chinese and
   Japanese put none). Without the quote, these are where the splitter itself ends
   sentences, so the pieces are the sentences a reader sees;
2. a piece still over the limit (a run-on sentence) is halved, again and again, at the
   boundary of the strongest kind it has nearest its middle: a clause mark (`;` `:` and
   their full-width forms, then closing marks and whitespace; a dash between spaces), else a
   comma (`,` `،` `、` `，`), else whitespace. A piece without any of them (a run of
   Chinese characters with no punctuation) stays whole.

Every cut is at whitespace (dropped: the pieces are stripped, as the splitter's sentences
are) or right after a full-width mark, so joining the pieces as the haystack joins sentences
(" ", or "" for Chinese and Japanese) gives the text back. A segment within the limit is
returned as it is.
"""

from __future__ import annotations

import re

#: Marks that end a sentence and need whitespace after them.
_TERMINATORS = ".!?\u2026\u0964\u0965\u061f\u06d4"  # . ! ? … । ॥ ؟ ۔
#: Full-width marks that end a sentence with or without whitespace after them.
_FULL_WIDTH_TERMINATORS = "\u3002\uff01\uff1f"  # 。！？
#: Quotes and brackets that may close a sentence after its terminator (German closes a quote
#: with «, French and Spanish with »).
_CLOSERS = "\"'\u201d\u2019\u00bb\u00ab\u203a\u2039\u300d\u300f\uff09)\\]"

_SENTENCE_END = re.compile(
    rf"[{_TERMINATORS}][{_CLOSERS}]*\s+(?=\S)"
    rf"|[{_FULL_WIDTH_TERMINATORS}][{_CLOSERS}]*\s*(?=\S)")

#: Weaker boundaries, strongest first: where a piece still over the limit is halved.
_CLAUSE = re.compile(rf"[;:][{_CLOSERS}]*\s+(?=\S)|\s[\u2014\u2013-]\s+(?=\S)"
                     rf"|[\uff1b\uff1a][{_CLOSERS}]*\s*(?=\S)")
_COMMA = re.compile(r"[,\u060c]\s+(?=\S)|[\u3001\uff0c]\s*(?=\S)")
_SPACE = re.compile(r"\s+(?=\S)")
_WEAKER = (_CLAUSE, _COMMA, _SPACE)


def bounded(text: str, limit: int) -> tuple[str, ...]:
    """`text` as it is when it has at most `limit` characters; else its sentences, each
    piece over the limit halved at its weaker boundaries (module docstring)."""
    if len(text) <= limit:
        return (text,)
    bounds = [0, *_sentence_ends(text), len(text)]
    sentences = (text[a:b].strip() for a, b in zip(bounds, bounds[1:]))
    return tuple(piece for s in sentences if s for piece in _halved(s, limit))


def _sentence_ends(text: str) -> list[int]:
    """Where each sentence inside `text` ends (the offset of the next one's first
    character), except before a lower-case letter (an abbreviation, `etc. and`)."""
    return [m.end() for m in _SENTENCE_END.finditer(text) if not text[m.end()].islower()]


def _halved(text: str, limit: int) -> list[str]:
    """`text` cut in two at the boundary of the strongest kind it has nearest its middle,
    each half again until every piece is within `limit` (or has no boundary left)."""
    if len(text) <= limit:
        return [text]
    for kind in _WEAKER:
        at = [m.end() for m in kind.finditer(text)]
        if at:
            middle = len(text) / 2
            cut = min(at, key=lambda a: (abs(a - middle), a))
            return [p for half in (text[:cut].strip(), text[cut:].strip()) if half
                    for p in _halved(half, limit)]
    return [text]
