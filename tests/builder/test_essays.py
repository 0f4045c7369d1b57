"""The essay haystack's sentences equal punkt's over the same word prefix, seams included."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from helpers.paths import SOURCES
from ruler.catalog import essays
from ruler.catalog.essays import (
    _cached_sentence_ends,
    _sentence_ends,
    build_corpus,
    punkt_tokenizer,
)

PUNKT = SOURCES / "nltk_data/tokenizers/punkt_tab/english"
ESSAYS = SOURCES / "essays/PaulGrahamEssays.json"


@lru_cache(maxsize=None)
def corpus():
    return build_corpus(ESSAYS, PUNKT)  # split by punkt here, never read from a cache


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


def test_the_split_kept_in_the_user_cache_is_punkts(tmp_path, monkeypatch):
    """Build processes keep the corpus's split in the user cache and read it back (punkt takes
    seconds over the corpus): what they read is punkt's split, without running punkt. On the
    corpus's first 20,000 words (its other tests split the whole)."""
    monkeypatch.setenv("RULER_CACHE", str(tmp_path / "cache"))
    small = tmp_path / "essays.json"
    small.write_text(json.dumps({"text": " ".join(corpus().words[:20_000])}))
    fresh = build_corpus(small, PUNKT)
    kept = build_corpus(small, PUNKT, cache_key="k")  # split by punkt, then kept
    assert (tmp_path / "cache" / "essay-splits" / "k.json").is_file()

    def punkt_again(*args):
        raise AssertionError("the corpus was split again")

    monkeypatch.setattr(essays, "_sentence_ends", punkt_again)
    read = build_corpus(small, PUNKT, cache_key="k")
    assert (read.first_ends, read.later_ends) == (kept.first_ends, kept.later_ends) == \
        (fresh.first_ends, fresh.later_ends)
    assert len(fresh.first_ends) > 500 and fresh.later_ends


@pytest.mark.parametrize("kept", ["", "not json", '{"ends": [3]}', "[3, 2]", "[0, 3]", "[3, 99]",
                                  "[1.5, 3]", "[true, 3]"])
def test_a_cached_split_that_is_not_a_split_of_the_text_is_split_anew(tmp_path, monkeypatch,
                                                                      kept):
    monkeypatch.setenv("RULER_CACHE", str(tmp_path))
    path = tmp_path / "essay-splits" / "k.json"
    path.parent.mkdir()
    path.write_text(kept)
    assert _cached_sentence_ends("k", "Ab. Cd.", lambda: [3, 7]) == [3, 7]
    assert json.loads(path.read_text()) == [3, 7]  # and replaced
    assert _cached_sentence_ends("k", "Ab. Cd.", lambda: [0]) == [3, 7]  # read back


def test_a_cache_that_cannot_be_written_only_costs_the_split(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("RULER_CACHE", str(tmp_path / "file"))  # not a folder
    assert _cached_sentence_ends("k", "Ab. Cd.", lambda: [3, 7]) == [3, 7]
