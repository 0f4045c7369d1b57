"""fwe: upstream's strings, Zipf counts, the noise token, strict top-3, exact lengths, fill."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from scipy.special import zeta

from helpers.tasks import assert_lengths_and_fill, fit, fit_many, generator, tokenizer
from ruler.benchmarks.ruler.freq_words import NOISE_TOKEN, zipf_counts
from ruler.benchmarks.ruler.tasks import FREQ_WORDS
from ruler.builder.fitting import fit_sample
from ruler.catalog.checks import check_row
from ruler.catalog.tasks import TASKS
from ruler.kernel.errors import TooShortError

# Upstream's strings (NVIDIA/RULER scripts/data/synthetic/constants.py).
UPSTREAM_TEMPLATE = (
    "Read the following coded text and track the frequency of each coded word. Find the three "
    "most frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. "
    "Please ignore the dots '....'. What are the three most frequently appeared words in the "
    "above coded text?")
UPSTREAM_PREFIX = (" Answer: According to the coded text above, the three most frequently "
                   "appeared words are:")
HEAD = UPSTREAM_TEMPLATE[:UPSTREAM_TEMPLATE.index("{context}")]
TAIL = UPSTREAM_TEMPLATE[UPSTREAM_TEMPLATE.index("{context}") + len("{context}"):]
N = 12


@pytest.fixture(scope="module")
def s4k():
    return fit_many("fwe", "llama-3.1", 4096, N)


def test_constants_equal_upstream():
    assert FREQ_WORDS.template == UPSTREAM_TEMPLATE
    assert FREQ_WORDS.answer_prefix == UPSTREAM_PREFIX
    assert FREQ_WORDS.tokens_to_generate == 50
    assert FREQ_WORDS.metric == "string_match_all"
    assert dict(TASKS["fwe"].params) == dict(alpha=2.0, coded_wordlen=6)
    assert NOISE_TOKEN == "..."  # upstream's code: vocab[0] = '...'


def test_zipf_counts_match_upstreams_formula():
    k = np.arange(1, 101)
    for n in (74, 1000, 12345):
        expected = [int(x) for x in n * (k ** -2.0) / zeta(2.0)]
        assert zipf_counts(n, 100, 2.0).tolist() == expected


def test_text_is_a_zipf_sample_with_strict_top3(s4k):
    gen = generator("fwe", "llama-3.1", 4096)
    assert gen.vocab_size == (4096 - 50) // 50  # upstream: (L - tokens_to_generate) // 50
    for s in s4k:
        r, d = s.row, s.fitted.draft
        assert r["input"].startswith(HEAD) and r["input"].endswith(TAIL)
        words = r["input"][len(HEAD):-len(TAIL)].split(" ")
        assert r["input"][slice(*d.context_span)] == " ".join(words)
        counts = Counter(words)
        ranked = sorted(counts.values(), reverse=True)
        expected = [c for c in zipf_counts(d.size, gen.vocab_size, 2.0).tolist() if c]
        assert ranked == expected
        assert counts.most_common(1)[0][0] == NOISE_TOKEN
        assert all(len(w) == 6 and w.isalpha() and w.islower() for w in counts if w != NOISE_TOKEN)
        top = [w for w, _ in counts.most_common(4)][1:]
        assert set(top) == set(r["outputs"]) and list(r["outputs"]) == top
        third = min(counts[w] for w in r["outputs"])
        assert all(c < third for w, c in counts.items()
                   if w not in r["outputs"] and w != NOISE_TOKEN)
        assert d.gold_spans == ()


def test_min_size_separates_rank_4_from_rank_5():
    gen = generator("fwe", "llama-3.1", 4096)
    n0 = gen.min_size
    assert n0 == math.ceil(zeta(2.0) / (4 ** -2 - 5 ** -2))
    for n in range(n0, n0 + 3000):
        c = zipf_counts(n, 10, 2.0)
        assert c[3] > c[4]


def test_lengths_exact_and_fill_4k(s4k):
    assert_lengths_and_fill(s4k, "llama-3.1", 4096)


@pytest.mark.parametrize("tok_name,L,n", [("llama-3.1", 16384, 10), ("gpt-4", 4096, 6),
                                          ("llama-2", 4096, 6), ("gpt-4", 16384, 4)])
def test_lengths_exact_and_fill_other(tok_name, L, n):
    samples = fit_many("fwe", tok_name, L, n)
    assert_lengths_and_fill(samples, tok_name, L)
    assert all(check_row(s.row) is None for s in samples)


def test_answers_recoverable_and_check_can_fail(s4k):
    for s in s4k:
        assert check_row(s.row) is None
    r = dict(s4k[0].row)
    assert check_row({**r, "outputs": r["outputs"][::-1]}) is None  # order does not matter
    words = Counter(r["input"][len(HEAD):-len(TAIL)].split(" "))
    fifth = [w for w, _ in words.most_common(5)][4]
    assert check_row({**r, "outputs": r["outputs"][:2] + [fifth]}) is not None
    # Make the 5th word as frequent as the 4th: the answer is no longer unambiguous.
    gap = words[r["outputs"][2]] - words[fifth]
    tampered = r["input"][:-len(TAIL)] + (" " + fifth) * gap + TAIL
    assert check_row({**r, "input": tampered}) is not None


def test_deterministic_and_index_dependent():
    gen = generator("fwe", "llama-3.1", 4096)
    a, b, c = fit(gen, 1), fit(gen, 1), fit(gen, 2)
    assert a.row == b.row
    assert a.row["outputs"] != c.row["outputs"]


def test_too_short_length_is_a_clear_error():
    gen = generator("fwe", "llama-3.1", 160)
    tok = tokenizer("llama-3.1")
    with pytest.raises(TooShortError, match="cannot be built at length 160"):
        fit_sample(gen, 0, lambda: random.Random(1),
                   lambda d: tok.prompt_length(d.input, d.answer_prefix), 160)
