"""cwe: upstream's strings and list format, the one-shot example, word pools, strict answers."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from helpers.tasks import assert_lengths_and_fill, fit, fit_many, generator, tokenizer
from ruler.benchmarks.ruler.common_words import (
    fallback_pool,
    numbered,
    parse_numbered,
    wonderwords_pool,
)
from ruler.benchmarks.ruler.tasks import COMMON_WORDS
from ruler.builder.fitting import fit_sample
from ruler.catalog.checks import check_row
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import TooShortError

# Upstream's strings (NVIDIA/RULER scripts/data/synthetic/constants.py).
UPSTREAM_TEMPLATE = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common "
    "words in the above list?")
UPSTREAM_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
HEAD = UPSTREAM_TEMPLATE[:UPSTREAM_TEMPLATE.index("{context}")]
TAIL = "\nQuestion: What are the 10 most common words in the above list?"
N = 12


@pytest.fixture(scope="module")
def s4k():
    return fit_many("cwe", "llama-3.1", 4096, N)


def test_constants_equal_upstream():
    assert COMMON_WORDS.template == UPSTREAM_TEMPLATE
    assert COMMON_WORDS.answer_prefix == UPSTREAM_PREFIX
    assert COMMON_WORDS.tokens_to_generate == 120
    assert COMMON_WORDS.metric == "string_match_all"
    assert dict(TASKS["cwe"].params)["freq_cw"] == 30
    assert dict(TASKS["cwe"].params)["freq_ucw"] == 3
    assert dict(TASKS["cwe"].params)["num_cw"] == 10


def test_word_pools():
    pool = wonderwords_pool()
    assert len(pool) == 8169 and list(pool) == sorted(set(pool))  # wonderwords 2.2.0
    assert "ad hoc" in pool and "ATM" in pool
    big = fallback_pool()
    assert len(big) > 200_000 and all(w.isalpha() and w.islower() for w in big[:1000])
    assert numbered(["a", "b c", "d"]) == "1. a 2. b c 3. d"
    assert parse_numbered("1. a 2. b c 3. d") == ["a", "b c", "d"]


def test_parse_numbered_cuts_at_each_next_label_even_when_labels_are_out_of_order():
    """Its one-split fast path gives what searching " 2. ", " 3. ", ... in turn gives (a
    tampered row's labels included: verify reads what it is handed)."""
    def searched(text):
        if not text.startswith("1. "):
            return None
        items, pos, i = [], 3, 2
        while (nxt := text.find(f" {i}. ", pos)) >= 0:
            items.append(text[pos:nxt])
            pos, i = nxt + len(f" {i}. "), i + 1
        return [*items, text[pos:]]

    rng = random.Random(3)
    for _ in range(3000):
        labels = [i if rng.random() > 0.15 else rng.randint(1, 12)
                  for i in range(1, rng.randint(1, 10) + 1)]
        text = " ".join(f"{n}. " + rng.choice(["a", "b c", "", "x.", " ", "3. y", "7. e"])
                        for n in labels)
        assert parse_numbered(text) == searched(text), text
    assert parse_numbered("2. a") is None and parse_numbered("") is None


def _split(text: str):
    i = text.rfind(HEAD)
    assert i > 0 and text.endswith(TAIL)
    return text[:i], parse_numbered(text[i + len(HEAD):-len(TAIL)])


def _check_example(example: str, n_words: int, common: int, uncommon: int):
    m = re.fullmatch(re.escape(HEAD) + r"(.*)" + re.escape(TAIL + UPSTREAM_PREFIX) + r" (.*)\n",
                     example, flags=re.S)
    assert m
    counts = Counter(parse_numbered(m.group(1)))
    answers = parse_numbered(m.group(2))
    assert len(counts) == n_words and len(answers) == 10
    assert all(counts[a] == common for a in answers)
    assert all(c == uncommon for w, c in counts.items() if w not in answers)


def test_prompt_layout_and_strict_answers(s4k):
    for s in s4k:
        r = s.row
        example, items = _split(r["input"])
        # One solved example with upstream's long-context parameters (40 words, 10/3).
        _check_example(example, 40, 10, 3)
        # The task list: 30 x the 10 answers, 3 x each other word, numbered from 1.
        counts = Counter(items)
        assert len(counts) == s.fitted.draft.size
        assert all(counts[w] == 30 for w in r["outputs"]) and len(set(r["outputs"])) == 10
        assert all(c == 3 for w, c in counts.items() if w not in r["outputs"])
        assert r["answer_prefix"] == UPSTREAM_PREFIX
        d = s.fitted.draft
        assert d.gold_spans == ()
        assert r["input"][slice(*d.context_span)] == numbered(items)
        # Strict even over the whole input (the example's words included).
        m = re.fullmatch(re.escape(HEAD) + r"(.*)" + re.escape(TAIL + UPSTREAM_PREFIX)
                         + r" (.*)\n", example, flags=re.S)
        whole = Counter(items + parse_numbered(m.group(1)) + parse_numbered(m.group(2)))
        assert min(whole[w] for w in r["outputs"]) > max(
            c for w, c in whole.items() if w not in r["outputs"])


def test_short_context_parameters():
    # Below 4096 upstream uses an example of 20 words 3/1 and a main list 6/1.
    samples = fit_many("cwe", "llama-3.1", 2048, 3)
    for s in samples:
        example, items = _split(s.row["input"])
        _check_example(example, 20, 3, 1)
        counts = Counter(items)
        assert all(counts[w] == 6 for w in s.row["outputs"])
        assert all(c == 1 for w, c in counts.items() if w not in s.row["outputs"])
        assert check_row(s.row) is None
    assert_lengths_and_fill(samples, "llama-3.1", 2048, mean_min=0.98, min_min=0.97)


def test_lengths_exact_and_fill_4k(s4k):
    assert_lengths_and_fill(s4k, "llama-3.1", 4096)


@pytest.mark.parametrize("tok_name,L,n", [("llama-3.1", 16384, 10), ("gpt-4", 4096, 6),
                                          ("llama-2", 4096, 6), ("llama-2", 16384, 4)])
def test_lengths_exact_and_fill_other(tok_name, L, n):
    samples = fit_many("cwe", tok_name, L, n)
    assert_lengths_and_fill(samples, tok_name, L)
    assert all(check_row(s.row) is None for s in samples)


def test_fallback_list_beyond_the_pool():
    gen = generator("cwe", "llama-3.1", 131072)
    pool = set(wonderwords_pool())
    big = set(fallback_pool())
    d = gen.draft(0, random.Random(5), len(pool) + 1)
    words = Counter(_split(d.input)[1])
    assert len(words) == len(pool) + 1 and set(words) <= big
    assert check_row({"task": "cwe", "input": d.input, "answer_prefix": d.answer_prefix,
                      "outputs": list(d.outputs)}) is None
    d2 = gen.draft(0, random.Random(5), len(pool))
    assert set(Counter(_split(d2.input)[1])) <= pool


def test_answers_recoverable_and_check_can_fail(s4k):
    for s in s4k:
        assert check_row(s.row) is None
    r = dict(s4k[0].row)
    _, items = _split(r["input"])
    other = next(w for w in items if w not in r["outputs"])
    assert check_row({**r, "outputs": r["outputs"][:9] + [other]}) is not None
    assert check_row({**r, "outputs": r["outputs"][:9]}) is not None
    # A text where another word is as frequent as the answers.
    extra = " ".join(f"{len(items) + 1 + i}. {other}" for i in range(30))
    tampered = r["input"][:-len(TAIL)] + " " + extra + TAIL
    assert check_row({**r, "input": tampered}) is not None


def test_deterministic_and_index_dependent():
    gen = generator("cwe", "llama-3.1", 4096)
    a, b, c = fit(gen, 2), fit(gen, 2), fit(gen, 3)
    assert a.row == b.row
    assert a.row["outputs"] != c.row["outputs"]


def test_too_short_length_is_a_clear_error():
    gen = generator("cwe", "llama-3.1", 512)
    tok = tokenizer("llama-3.1")
    with pytest.raises(TooShortError, match="cannot be built at length 512"):
        fit_sample(gen, 0, lambda: random.Random(1),
                   lambda d: tok.prompt_length(d.input, d.answer_prefix), 512)
