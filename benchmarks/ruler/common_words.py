"""Common words extraction (cwe): name the 10 words repeated most often in a numbered list.

Upstream (`common_words_extraction.py`): `num_words` distinct words are drawn; the first
`num_cw` are "common" (repeated freq_cw times), the rest "uncommon" (freq_ucw times); the
list is shuffled and written as `1. w 2. w ...`. One solved example (the template, the answer
prefix, then " 1. w 2. w ...") precedes the task, joined by "\\n". Below 4096 tokens upstream
uses smaller parameters (example 20 words 3/1, main 6/1); from 4096 on, example 40 words 10/3
and main freq_cw/freq_ucw (30/3).

Counting by list item, every common word occurs freq_cw times and every other word of the task
list at most freq_ucw times, so the answer is unambiguous by construction; even counted over
the whole input (example included) another word reaches at most freq_ucw + the example's
common count (3 + 10 = 13 < 30; 1 + 3 = 4 < 6 below 4096).
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ruler.benchmarks.ruler.tasks import COMMON_WORDS
from ruler.catalog.base import Draft, TaskGenerator, joined, tail_pieces, template_ends
from ruler.catalog.family import TaskFamily
from ruler.catalog.sampling import strictly_most_frequent
from ruler.catalog.tally import Gather, Tally
from ruler.catalog.words import wonderwords_list

SHORT_CONTEXT = 4096  # upstream switches parameters at max_seq_length < 4096
NUM_FEWSHOT = 1       # upstream's --num_fewshot default


@dataclass(frozen=True)
class ListShape:
    num_words: int
    common_repeats: int
    uncommon_repeats: int


# Both pools are installed packages' files (their versions pinned by the constraints): read
# once per process (each build context asked again; web2's sort takes 0.2 s).
@functools.lru_cache(maxsize=1)
def wonderwords_pool() -> tuple[str, ...]:
    """Upstream's pool: sorted(set(nouns + adjectives + verbs)) of wonderwords 2.2.0 (8,169)."""
    words = (wonderwords_list("nounlist.txt") + wonderwords_list("adjectivelist.txt")
             + wonderwords_list("verblist.txt"))
    return tuple(sorted(set(words)))


@functools.lru_cache(maxsize=1)
def fallback_pool() -> tuple[str, ...]:
    """The larger list used when a length needs more distinct words than the pool has.

    Upstream reads `json/english_words.json`, a git-LFS file whose source is not published;
    this uses the `english-words` package's web2 list (lower-case, alphabetic: 234,450 words).
    """
    from english_words import get_english_words_set

    return tuple(sorted(get_english_words_set(["web2"], lower=True, alpha=True)))


#: Where the template and the answer prefix say how many words are asked for.
_ASKED = ("the 10 most common words", "The top 10 words")


def asking_for(num_cw: int) -> tuple[str, str]:
    """The family's template and answer prefix asking for `num_cw` words: upstream's own for
    10; a declared task asking for another count says that count (upstream's keeps "10":
    paper-analysis §1.6 item 11)."""
    template, prefix = COMMON_WORDS.template, COMMON_WORDS.answer_prefix
    if num_cw == 10:
        return template, prefix
    assert _ASKED[0] in template and _ASKED[1] in prefix
    return (template.replace(_ASKED[0], _ASKED[0].replace("10", str(num_cw))),
            prefix.replace(_ASKED[1], _ASKED[1].replace("10", str(num_cw))))


def numbered(words: Sequence[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


class CommonWordsGenerator(TaskGenerator):
    unit = "distinct words"
    calibration_step = 10  # upstream's `incremental`

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        self.family = spec.family
        self.num_cw = int(p["num_cw"])
        # the question and answer prefix ask for num_cw words (upstream's always say 10)
        self.template, self.answer_prefix = asking_for(self.num_cw)
        # solved examples before the task (a declared task may have none: the paper's
        # footnote-7 experiment; `task_args`)
        self.num_fewshot = int(p.get("num_fewshot", NUM_FEWSHOT))
        if max_seq_length < SHORT_CONTEXT:
            self.example = ListShape(20, 3, 1)
            self.main_repeats = (6, 1)
        else:
            self.example = ListShape(40, 10, 3)
            self.main_repeats = (int(p["freq_cw"]), int(p["freq_ucw"]))
        self.pool = ctx.resource("cwe-pool:wonderwords-2.2.0", wonderwords_pool)

    @property
    def min_size(self) -> int:
        return self.num_cw + 1  # the common words plus at least one other word

    @property
    def max_size(self) -> int | None:
        # Every word of a sample is distinct, so the larger list bounds the size (about 4.5M
        # tokens of list). Below 64K no probe comes near it, and the list is not loaded.
        return None if self.max_seq_length < 65536 else len(self._fallback())

    def _fallback(self) -> tuple[str, ...]:
        return self.ctx.resource("cwe-pool:english-words-web2", fallback_pool)

    def _word_ids(self, rng: random.Random, num_words: int) -> tuple[tuple[str, ...], np.ndarray]:
        # Upstream: random.sample(words, n) if n <= len(words), else the whole sample from the
        # larger list. A prefix of one seeded permutation has the same distribution and keeps
        # the words of a smaller draft when the fitter tries a larger one.
        pool = self.pool if num_words <= len(self.pool) else self._fallback()
        seed = rng.getrandbits(64)
        # the last sample's permutations are kept (its example's and its list's): the
        # fitter's probes of a sample draw the same ones (of 234,450 words at the longest
        # lengths)
        memo = self.__dict__.setdefault("_permutations", {})
        key = (seed, len(pool))
        if key not in memo:
            if len(memo) >= 4:
                memo.clear()
            memo[key] = np.random.default_rng(seed).permutation(len(pool))
        return pool, memo[key][:num_words]

    def _arrays(self, pool: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The pool and " " + each word as arrays, built once per pool (the pieces of every
        draft share these strings)."""
        name = "wonderwords-2.2.0" if pool is self.pool else "english-words-web2"
        return self.ctx.resource(f"cwe-arrays:{name}", lambda: (
            np.asarray(pool, dtype=object), np.asarray([" " + w for w in pool], dtype=object)))

    def _order(self, rng: random.Random, n: int, common_repeats: int,
               uncommon_repeats: int) -> np.ndarray:
        """Indices into the n words of the repeated list, in a uniformly random order
        (upstream: a shuffled list)."""
        ids = np.concatenate([np.tile(np.arange(min(n, self.num_cw)), common_repeats),
                              np.tile(np.arange(self.num_cw, n), uncommon_repeats)])
        # numpy (seeded from the sample's rng) because the list is most of a long prompt.
        np.random.default_rng(rng.getrandbits(64)).shuffle(ids)
        return ids

    def _labels(self, n: int) -> tuple[list[str], list[str]]:
        """"1.", "2.", ... and " 1.", " 2.", ...: cached, so every draft shares these strings."""
        labels = self.__dict__.setdefault("_label_cache", [])
        spaced = self.__dict__.setdefault("_spaced_label_cache", [])
        labels.extend(f"{i + 1}." for i in range(len(labels), n))
        spaced.extend(" " + label for label in labels[len(spaced):])
        return labels[:n], spaced[:n]

    def _numbered(self, head: str, items: Sequence[str], tail: str,
                  opened_items: Sequence[str] | None = None) -> tuple[str, tuple[str, ...]]:
        """head + numbered(items) + tail, cut at every space of the list: "1.", " w1", " 2.", ...

        `opened_items` gives " " + each item ready-made (shared strings of the word pool)."""
        labels, spaced_labels = self._labels(len(items))
        units: list[str] = [""] * (2 * len(items))
        units[0::2], units[1::2] = labels, items
        opened: list[str] = [""] * (2 * len(items) - 1)
        opened[0::2] = (opened_items if opened_items is not None
                        else [" " + w for w in items])
        opened[1::2] = spaced_labels[1:]
        return joined(head, units, " ", tail, clean=True, opened=opened)

    def _layout(self, rng: random.Random, size: int):
        """The solved example's text and pieces, the task's pool, common words and picks
        (pool positions of the list's items, in order)."""
        head, tail = template_ends(self.template)
        # The solved examples first: they do not depend on the size. Each is the task text,
        # the answer prefix, " " + the numbered answers, then "\n"; cut like the task itself,
        # so the tokenized frame of every probe (builder.counting) stays small.
        text_parts: list[str] = []
        pieces: list[str] = []
        for _ in range(self.num_fewshot):
            ex = self.example
            ex_pool, ex_ids = self._word_ids(rng, ex.num_words)
            ex_words = [ex_pool[i] for i in ex_ids.tolist()]
            order = self._order(rng, ex.num_words, ex.common_repeats, ex.uncommon_repeats)
            ex_items = [ex_words[i] for i in order.tolist()]
            for part in (self._numbered(head, ex_items, tail + self.answer_prefix),
                         self._numbered(" ", ex_words[:self.num_cw], "\n")):
                text_parts.append(part[0])
                pieces.extend(part[1])
        pool, word_ids = self._word_ids(rng, size)
        common = [pool[i] for i in word_ids[:self.num_cw].tolist()]
        picks = word_ids[self._order(rng, size, *self.main_repeats)]
        return text_parts, pieces, pool, common, picks

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        head, tail = template_ends(self.template)
        text_parts, pieces, pool, common, picks = self._layout(rng, size)
        offset = sum(map(len, text_parts))
        plain, spaced = self._arrays(pool)
        task, task_pieces = self._numbered(head, plain[picks].tolist(), tail,
                                           spaced[picks].tolist())
        text = "".join(text_parts) + task
        return Draft(input=text, answer_prefix=self.answer_prefix,
                     outputs=tuple(common), gold_spans=(),
                     context_span=(offset + len(head), len(text) - len(tail)),
                     size=size, pieces=(*pieces, *task_pieces))

    def tally(self, index: int, rng: random.Random, size: int) -> Tally | None:
        """The draft's pieces: the solved example's, head + "1.", then " " + each item and
        " 2.", " 3.", ... (positions in the spaced pool and the spaced labels), the last item
        with the tail (as `_numbered` cuts them)."""
        head, tail = template_ends(self.template)
        _, pieces, pool, _, picks = self._layout(rng, size)
        if len(pieces) < 2:
            return None
        _, spaced = self._arrays(pool)
        self._labels(len(picks))
        labels = self.__dict__["_spaced_label_cache"]  # " 1.", " 2.", ...: grows, never changes
        return Tally(first=(pieces[0], pieces[1]),
                     middle=((*pieces[2:], head + "1."), Gather(spaced, picks[:-1]),
                             Gather(labels, slice(1, len(picks)))),
                     last=tail_pieces(spaced[picks[-1]], tail),
                     answer_prefix=self.answer_prefix)


# --- answer check ---------------------------------------------------------------------------

_LABEL = re.compile(r" ([0-9]+)\. ")


def parse_numbered(text: str) -> list[str] | None:
    """Items of `1. a 2. b ...` (words contain no digits, so " {i}. " delimits item i)."""
    if not text.startswith("1. "):
        return None
    # One split at every label (the build's workers check every row: this is the fast path);
    # when the labels are 2, 3, ... in order it cuts where the search below cuts.
    parts = _LABEL.split(text)
    if parts[1::2] == [str(i) for i in range(2, len(parts) // 2 + 2)]:
        return [parts[0][3:], *parts[2::2]]
    items, pos, i = [], 3, 2
    while True:
        nxt = text.find(f" {i}. ", pos)
        if nxt < 0:
            items.append(text[pos:])
            return items
        items.append(text[pos:nxt])
        pos = nxt + len(f" {i}. ")
        i += 1


def _task_list(row: Mapping) -> tuple[int, int] | None:
    """Where the task's list is: after the last template head (the solved example's opens the
    input too), before the template's tail."""
    head, tail = template_ends(asking_for(len(row["outputs"]))[0])
    text: str = row["input"]
    start = text.rfind(head)
    if start < 0 or not text.endswith(tail):
        return None
    return start + len(head), len(text) - len(tail)


def check_row(row: Mapping) -> str | None:
    """Count the items of the task's list (the last one in the input) and compare."""
    span = _task_list(row)
    if span is None:
        return "task text not found"
    return check_numbered_answers(row["input"][slice(*span)], row["outputs"])


def check_numbered_answers(listing: str, outputs: Sequence[str]) -> str | None:
    """Why a row's numbered word list does not make `outputs` its strictly most frequent
    words, each once (None when it does): CWE's answer check, v1's and ONERULER's."""
    items = parse_numbered(listing)
    if not items:
        return "numbered list not found"
    counts = Counter(items)
    answers = list(outputs)
    if len(set(answers)) != len(answers) or any(o not in counts for o in answers):
        return "an output is repeated or not in the list"
    return strictly_most_frequent(counts, answers)


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """No gold items (the answer is an aggregate over the whole list); the context is the
    task's list."""
    span = _task_list(row)
    return "task text not found" if span is None else ([], span)


FAMILY = TaskFamily(
    spec=COMMON_WORDS, generator=CommonWordsGenerator, check_row=check_row,
    gold_spans=gold_spans)
