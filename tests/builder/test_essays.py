"""The essay haystack's sentences equal punkt's over the same word prefix, seams included."""

from __future__ import annotations

from functools import lru_cache

import pytest

from helpers.paths import SOURCES
from ruler.builder.essays import _sentence_ends, build_corpus, punkt_tokenizer

PUNKT = SOURCES / "nltk_data/tokenizers/punkt_tab/english"


@lru_cache(maxsize=None)
def corpus():
    return build_corpus(SOURCES / "essays/PaulGrahamEssays.json", PUNKT)


def _punkt_sentences(text: str) -> list[str]:
    # upstream: sent_tokenize(text.strip()); span ends as the builder reads them
    ends, prev, out = _sentence_ends(punkt_tokenizer(PUNKT), text), 0, []
    for b in ends:
        s = text[prev:b].strip()
        if s:
            out.append(s)
        prev = b
    return out


@pytest.mark.parametrize("num_words", [1, 37, 5000, pytest.param(100_000, marks=pytest.mark.slow),
                                       "copy+3000"])
def test_prefix_sentences_equal_punkt_over_the_prefix(num_words):
    c = corpus()
    n = len(c.words) + 3000 if num_words == "copy+3000" else num_words
    expected = _punkt_sentences(c.prefix_text(n))
    sentences, spaced = c.prefix_sentences_spaced(n)
    assert sentences == expected
    assert spaced == [" " + s for s in expected]


def test_cached_sentences_are_shared_between_prefixes():
    c = corpus()
    a, _ = c.prefix_sentences_spaced(20_000)
    b, _ = c.prefix_sentences_spaced(30_000)
    assert all(x is y for x, y in zip(a[:-1], b))  # complete sentences: the same objects
