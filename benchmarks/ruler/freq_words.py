"""Frequent words extraction (fwe): name the three most frequent coded words of a Zipf text.

Upstream (`freq_words_extraction.py`): a vocabulary of `vocab_size = budget // 50` random
6-letter lower-case words in random rank order; rank 1 is replaced by the noise token "...";
word k appears int(N * k^-alpha / zeta(alpha)) times; the words are shuffled and joined by
" ". The answer is ranks 2-4. Size here is N, the Zipf scale (about one word per unit, so the
fit is tight). Ranks 4 and 5 differ by at least one occurrence whenever
N * (4^-a - 5^-a) / zeta(a) >= 1, which `min_size` guarantees for every fitted sample.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Mapping

import numpy as np
from scipy.special import zeta

from ruler.benchmarks.ruler.tasks import FREQ_WORDS
from ruler.catalog.base import Draft, TaskGenerator, joined, tail_pieces, template_ends
from ruler.catalog.family import TaskFamily
from ruler.catalog.sampling import strictly_most_frequent
from ruler.catalog.tally import Gather, Tally

# Upstream's code sets vocab[0] = '...' (three dots) while the question says "Please ignore
# the dots '....'" (four). The generated text is kept as upstream produced it.
NOISE_TOKEN = "..."
LETTERS = "abcdefghijklmnopqrstuvwxyz"
TOKENS_PER_VOCAB_WORD = 50  # upstream: vocab_size = max_seq_length // 50
NUM_ANSWERS = 3


def zipf_counts(scale: int, vocab_size: int, alpha: float) -> np.ndarray:
    """Occurrences of ranks 1..vocab_size, computed as upstream (float64, then truncated)."""
    k = np.arange(1, vocab_size + 1)
    return (scale * (k ** -alpha) / zeta(alpha)).astype(int)


class FreqWordsGenerator(TaskGenerator):
    unit = "Zipf scale (words)"
    calibration_step = 200

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        self.family = spec.family
        self.alpha = float(p["alpha"])
        self.wordlen = int(p["coded_wordlen"])
        # Upstream subtracts tokens_to_generate from the budget before dividing (PR #93).
        budget = max_seq_length - self.tokens_to_generate
        self.vocab_size = max(NUM_ANSWERS + 2, budget // TOKENS_PER_VOCAB_WORD)
        if int(p.get("vocab_size", -1)) > 0:  # a declared task's own (upstream's --vocab_size)
            self.vocab_size = int(p["vocab_size"])

    @property
    def min_size(self) -> int:
        # Smallest N from which rank 4 always occurs strictly more often than rank 5.
        gap = 4 ** -self.alpha - 5 ** -self.alpha
        return math.ceil(float(zeta(self.alpha)) / gap)

    def _vocab(self, rng: random.Random) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Distinct uniform random words, rank 1 replaced by the noise token; with the words
        and " " + each word as arrays (the pieces of every draft of the sample).

        Same law as upstream (uniform words, duplicates redrawn, then a random rank order):
        draw codes in [0, 26^len), keep first occurrences in draw order. The fitter drafts a
        sample at several sizes, and the vocabulary does not depend on the size: the last
        sample's is kept, by the seed drawn for it.
        """
        seed = rng.getrandbits(64)
        memo = self.__dict__.get("_vocab_memo")
        if memo is not None and memo[0] == seed:
            return memo[1]
        gen = np.random.default_rng(seed)
        space = len(LETTERS) ** self.wordlen
        codes = np.empty(0, dtype=np.int64)
        while True:
            codes = np.concatenate([codes, gen.integers(0, space, size=self.vocab_size + 16)])
            _, first = np.unique(codes, return_index=True)
            if len(first) >= self.vocab_size:
                break
        kept = codes[np.sort(first)][:self.vocab_size]
        digits = (kept[:, None] // len(LETTERS) ** np.arange(self.wordlen)) % len(LETTERS)
        text = (digits + ord("a")).astype(np.uint8).tobytes().decode("ascii")
        vocab = [text[i:i + self.wordlen] for i in range(0, len(text), self.wordlen)]
        vocab[0] = NOISE_TOKEN  # rank 1 is noise, as upstream
        made = (vocab, np.asarray(vocab, dtype=object),
                np.asarray([" " + v for v in vocab], dtype=object))
        self.__dict__["_vocab_memo"] = (seed, made)
        return made

    def _layout(self, rng: random.Random, size: int) -> tuple[list[str], np.ndarray,
                                                                np.ndarray, np.ndarray]:
        """The vocabulary (list, array, spaced array) and the shuffled word ids of a draft."""
        vocab, words, spaced = self._vocab(rng)  # size-independent
        counts = zipf_counts(size, len(vocab), self.alpha)
        if counts[NUM_ANSWERS] <= counts[NUM_ANSWERS + 1]:
            raise AssertionError(f"fwe: N={size} does not separate rank 4 from rank 5")
        # Shuffle word ids with numpy (seeded from the sample's rng): this list is the bulk
        # of the prompt (~0.5 words per token), and the draft runs once per length probe.
        ids = np.repeat(np.arange(len(vocab)), counts)
        np.random.default_rng(rng.getrandbits(64)).shuffle(ids)
        return vocab, words, spaced, ids

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        vocab, words, spaced, ids = self._layout(rng, size)
        head, tail = template_ends(self.family.template)
        text, pieces = joined(head, words[ids].tolist(), " ", tail, clean=True,
                              opened=spaced[ids[1:]].tolist())
        return Draft(input=text, answer_prefix=self.family.answer_prefix,
                     outputs=tuple(vocab[1:1 + NUM_ANSWERS]), gold_spans=(),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces)

    def tally(self, index: int, rng: random.Random, size: int) -> Tally | None:
        """The draft's pieces: head + its first word, then " " + each other word (positions
        in the spaced vocabulary), the last one with the tail (joined's cut)."""
        vocab, words, spaced, ids = self._layout(rng, size)
        if len(ids) < 3:
            return None
        head, tail = template_ends(self.family.template)
        return Tally(first=(head + words[ids[0]], spaced[ids[1]]),
                     middle=(Gather(spaced, ids[2:-1]),),
                     last=tail_pieces(spaced[ids[-1]], tail),
                     answer_prefix=self.family.answer_prefix)


def check_row(row: Mapping) -> str | None:
    """Count the coded words (ignoring the dots) and compare with the outputs."""
    head, tail = template_ends(FREQ_WORDS.template)
    text: str = row["input"]
    if not text.startswith(head) or not text.endswith(tail):
        return "task text not found"
    # every word, then without the empty and dots-only ones (once each, not once a word)
    counts = Counter(text[len(head):len(text) - len(tail)].split(" "))
    for w in [w for w in counts if w.strip(".") == ""]:
        del counts[w]
    outputs = list(row["outputs"])
    if len(outputs) != NUM_ANSWERS or len(set(outputs)) != NUM_ANSWERS:
        return f"expected {NUM_ANSWERS} distinct outputs"
    if any(o not in counts for o in outputs):
        return "an output does not occur in the text"
    return strictly_most_frequent(counts, outputs)


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """No gold items (the answer is an aggregate over the whole text); the context is the
    coded text between the template's ends."""
    head, tail = template_ends(FREQ_WORDS.template)
    text: str = row["input"]
    if not text.startswith(head) or not text.endswith(tail):
        return "task text not found"
    return [], (len(head), len(text) - len(tail))


FAMILY = TaskFamily(
    spec=FREQ_WORDS, generator=FreqWordsGenerator, check_row=check_row,
    gold_spans=gold_spans)
