"""ONERULER's common-words tasks (cwe, cwe_easy) in one language: name the 10 words that
appear most often in a numbered list.

Upstream (`synthetic/common_words_extraction.py`, notes/oneruler.md §4): the language's words
(English: wonderwords 2.2.0's noun, adjective and verb lists; else its dictionary), as
sorted(set(...)) shuffled once by a fresh `Random(seed)`; a sample of n of them
(`random.sample`), the first 10 "common" (the answer, in that order), the rest "uncommon";
the list is the common words freq_cw times and the others freq_ucw times
(`common * freq_cw + uncommon * freq_ucw`), shuffled by a fresh `Random(seed)` (one
permutation per list length), written `1. w 2. w ...`, and the prompt is the whole `cwe.txt`
formatted with it. The frequencies are 20/10 (cwe) and 30/3 (cwe_easy), and 10/5 and 10/1
when the length is at most 8000. No solved example, unlike RULER's cwe. Cross-lingual
configs have no CWE (upstream's script refuses `--xling`).

Differences (`differences`): n is the most words with which the prompt plus the 50
answer tokens fits L (upstream keeps the first n whose prompt alone reaches L); the sample is
the first n of the sample's own random permutation of the words (the distribution of
`random.sample`, and a larger draft keeps a smaller one's words); the Vietnamese template's
leftover first paragraph, which holds `{context}` a second time between literal `\\n`s, is
removed, so the list appears once.
"""

from __future__ import annotations

import random
from functools import cached_property
from typing import Mapping

import numpy as np

from ruler.benchmarks.oneruler.data import OnerulerData
from ruler.benchmarks.oneruler.languages import OnerulerLanguage
from ruler.benchmarks.oneruler.resources import check_resources, cwe_pool, data, language_of
from ruler.benchmarks.oneruler.tasks import ONERULER_CWE
from ruler.benchmarks.ruler.common_words import check_numbered_answers
from ruler.benchmarks.ruler2.items import aimed_step
from ruler.catalog.base import Draft, TaskGenerator, joined, template_ends
from ruler.catalog.family import TaskFamily
from ruler.catalog.tasks import TaskSpec
from ruler.kernel.errors import RulerError


def cwe_template(raw: str) -> str:
    """A language's cwe.txt as a template with one list: upstream's Vietnamese file opens with
    a leftover paragraph that holds `{context}` a second time between literal backslash-n
    pairs (`...nhất.\\n{context}\\nCâu hỏi: ...?`); it is removed up to the blank line that
    follows it, leaving the instruction, a blank line and the list, as in the other 25
    languages. Any other file is used as it is."""
    if raw.count("{context}") <= 1:
        return raw
    cut = raw.find("\\n{context}")
    end = raw.find("\n\n", cut)
    fixed = raw[:cut] + raw[end:] if cut >= 0 and end >= 0 else raw
    if fixed.count("{context}") != 1 or "\\n" in fixed:
        raise RulerError("a cwe.txt holds {context} more than once in an unknown way")
    return fixed


def frequencies(params: Mapping, max_seq_length: int) -> tuple[int, int]:
    """(freq_cw, freq_ucw) at this length: upstream scales 20/10 and 30/3 down to 10/5 and 10/1
    when max_seq_length <= 8000."""
    if max_seq_length <= params["short_at_most"]:
        return params["short_freq_cw"], params["short_freq_ucw"]
    return params["freq_cw"], params["freq_ucw"]


class OnerulerCweGenerator(TaskGenerator):
    unit = "distinct words"
    # A language's dictionary bounds the words: where L needs more (cwe_easy at 128K in most
    # languages), the row holds every word and is shorter than L, as upstream's ("run out of
    # vocabs"). The card and the build summary's fill say so.
    short_at_bound = True

    def __init__(self, spec: TaskSpec, ctx, max_seq_length: int):
        super().__init__(spec, ctx, max_seq_length)
        language = language_of(ctx)
        if language.cross_lingual:
            raise RulerError(f"task {spec.name}: ONERULER's CWE has no cross-lingual setting "
                             f"(upstream refuses --xling); build the NIAH tasks for "
                             f"{language.code}")
        self.language = language.context
        self.num_cw = spec.params["num_cw"]
        self.freq_cw, self.freq_ucw = frequencies(spec.params, max_seq_length)
        self.pool = cwe_pool(ctx, self.language)
        self.template = cwe_template(data(ctx).cwe_template(self.language))
        self.head, self.tail = template_ends(self.template, query="")
        self.clean = all(w and w == w.strip() for w in self.pool)  # ta has "வினோதமான\n"

    @property
    def min_size(self) -> int:
        return self.num_cw + 1  # the common words and at least one other

    @property
    def max_size(self) -> int:
        return len(self.pool)

    @property
    def calibration_step(self) -> int:
        # A distinct word costs its repeats' labels and words: some 4-6 tokens each.
        per_word = 5 * (self.freq_ucw + self.freq_cw * self.num_cw / 100)
        return min(aimed_step(self.max_seq_length, max(1, round(per_word)), 10),
                   max(1, len(self.pool) - self.min_size))

    @cached_property
    def _opened_pool(self) -> np.ndarray:
        return np.asarray([" " + w for w in self.pool], dtype=object)

    def _order(self, n: int) -> list[int]:
        """Upstream's `random.Random(seed).shuffle(word_list)` for a list of n items, as the
        permutation it applies (the same for every list of that length)."""
        orders = self.__dict__.setdefault("_orders", {})
        if n not in orders:
            if len(orders) > 64:
                orders.clear()
            order = list(range(n))
            random.Random(self.ctx.seed).shuffle(order)
            orders[n] = np.asarray(order)
        return orders[n]

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        ids = np.random.default_rng(rng.getrandbits(64)).permutation(len(self.pool))[:size]
        listed = np.concatenate([np.tile(ids[:self.num_cw], self.freq_cw),
                                 np.tile(ids[self.num_cw:], self.freq_ucw)])
        listed = listed[self._order(len(listed))]
        words = [self.pool[i] for i in listed.tolist()]
        labels = [f"{i + 1}." for i in range(len(words))]
        units: list[str] = [""] * (2 * len(words))
        units[0::2], units[1::2] = labels, words
        if self.clean:
            opened: list[str] = [""] * (2 * len(words) - 1)
            opened[0::2] = self._opened_pool[listed].tolist()
            opened[1::2] = [" " + label for label in labels[1:]]
            text, pieces = joined(self.head, units, " ", self.tail, clean=True, opened=opened)
        else:
            text, pieces = joined(self.head, units, " ", self.tail)
        common = tuple(self.pool[i] for i in ids[:self.num_cw].tolist())
        return Draft(input=text, answer_prefix="", outputs=common, gold_spans=(),
                     context_span=(len(self.head), len(text) - len(self.tail)), size=size,
                     pieces=pieces)


# --- checks ------------------------------------------------------------------------------------

def _template(row: Mapping, found: tuple[OnerulerLanguage, OnerulerData] | None = None
              ) -> tuple[str, str] | str:
    """The head and tail of the row's language's template (`found`: its language and data
    folder; by default those its config names, found as builds find sources)."""
    resolved = check_resources(row) if found is None else found
    if isinstance(resolved, str):
        return resolved
    language, folder = resolved
    return template_ends(cwe_template(folder.cwe_template(language.context)), query="")


def check_row(row: Mapping, resources: tuple[OnerulerLanguage, OnerulerData] | None = None
              ) -> str | None:
    """The list between the template's head and tail: `outputs` are distinct, in it, and each
    more frequent than every other word. `resources`: as `_template`'s `found`."""
    ends = _template(row, resources)
    if isinstance(ends, str):
        return ends
    head, tail = ends
    text: str = row["input"]
    if not text.startswith(head) or not text.endswith(tail):
        return "the input is not the language's template"
    return check_numbered_answers(text[len(head):len(text) - len(tail)], row["outputs"])


def gold_spans(row: Mapping, generator=None):
    """No gold items (an aggregate over the list); the context is the list."""
    ends = _template(row)
    if isinstance(ends, str):
        return ends
    head, tail = ends
    return [], (len(head), len(row["input"]) - len(tail))


def check_built_row(row: Mapping, generator: OnerulerCweGenerator) -> str | None:
    """`check_row` with the build's own language and data folder."""
    return check_row(row, (language_of(generator.ctx), data(generator.ctx)))


FAMILY = TaskFamily(spec=ONERULER_CWE, generator=OnerulerCweGenerator, check_row=check_row,
                    gold_spans=gold_spans, check_built_row=check_built_row)
