"""The haystack sentences of every ONERULER book: none longer than the stated bound in tokens of
llama-3.1 and qwen2.5 (the segment check: a book whose sentences grow again fails here, before
any row is built), and the books the splitter already cuts sanely cut exactly as it cuts them,
so their rows keep their hashes."""

from __future__ import annotations

from functools import lru_cache

import pytest

from helpers.paths import SOURCES
from helpers.tasks import tokenizer
from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.differences import ONERULER_SENTENCES
from ruler.benchmarks.oneruler.languages import LANGUAGES
from ruler.benchmarks.oneruler.sentences import (
    MAX_SEGMENT_CHARS,
    SEGMENT_TOKENS,
    bounded_segments,
    split_sentences,
    splitter_sentences,
)

#: The books every one of whose splitter's segments is within its language's limit.
UNTOUCHED = ("en", "fa", "fi", "hu", "pl", "sr", "st", "sv", "sw", "uk", "zh")


@lru_cache(maxsize=None)
def book(lang: str) -> str:
    return OnerulerData(SOURCES / "oneruler").book(lang)


@lru_cache(maxsize=None)
def splitter(lang: str) -> tuple[str, ...]:
    return splitter_sentences(lang, book(lang))


@lru_cache(maxsize=None)
def haystack(lang: str) -> tuple[str, ...]:
    """`split_sentences(lang, book)`, from the splitter's sentences split once."""
    return bounded_segments(lang, splitter(lang))


def test_the_haystack_is_the_splitters_sentences_bounded():
    assert split_sentences("ko", book("ko")) == haystack("ko")
    assert len(haystack("ko")) > len(splitter("ko"))  # a segment of 3,008 characters


@pytest.mark.parametrize("tok", ["llama-3.1", "qwen2.5"])
def test_no_haystack_sentence_of_any_book_exceeds_the_bound(tok):
    """sentencex alone gave es 63,553 tokens, de 72,962, nl 60,742 (llama-3.1). Both are
    byte-level BPE tokenizers (a token holds at least one byte), so only sentences of more
    than SEGMENT_TOKENS bytes are counted."""
    counter = tokenizer(tok)
    longest = {}
    for lang in LANGUAGES:
        long = [s for s in haystack(lang) if len(s.encode()) > SEGMENT_TOKENS]
        longest[lang] = max(counter.count_batch(long), default=0)
    over = {lang: n for lang, n in longest.items() if n > SEGMENT_TOKENS}
    assert not over, f"haystack sentences over {SEGMENT_TOKENS} {tok} tokens: {over}"


def test_every_segment_is_within_its_languages_limit_or_has_no_boundary_left():
    for lang in LANGUAGES:
        long = [s for s in haystack(lang) if len(s) > MAX_SEGMENT_CHARS[lang]]
        assert not long, (lang, [s[:80] for s in long])


def test_books_within_their_limit_are_split_exactly_as_the_splitter_splits_them():
    untouched = tuple(lang for lang in LANGUAGES
                      if max(map(len, splitter(lang))) <= MAX_SEGMENT_CHARS[lang])
    assert untouched == UNTOUCHED
    for lang in LANGUAGES:
        if lang in UNTOUCHED:
            assert haystack(lang) == splitter(lang), lang
        else:  # only the long segments are cut; the text is the same
            sep = "" if lang in ("zh", "ja") else " "
            assert len(haystack(lang)) > len(splitter(lang)), lang
            assert sep.join(haystack(lang)).replace(" ", "") == \
                sep.join(splitter(lang)).replace(" ", ""), lang


def test_the_cards_sentence_counts_are_the_split_books():
    """`differences.ONERULER_SENTENCES`, the counts the card states: the splitter's beside the
    haystack's."""
    assert ONERULER_SENTENCES == {lang: (len(splitter(lang)), len(haystack(lang)))
                                  for lang in LANGUAGES}
