"""Frequent-words rows (`paper-analysis.md` §4.3 fwe, §4.4 aggregation and copying modes).

The coded text is what the template puts between its instruction and its question; its
words are counted and ranked by frequency (rank 1, the most frequent, is upstream's noise
token "..."). The gold words are the row's references (ranks 2-4 in upstream's task), so
another α or vocabulary is read the same way."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ruler.benchmarks.ruler.failure_modes.base import Answer, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.labels import STOPWORDS, THRESHOLDS
from ruler.benchmarks.ruler.failure_modes.text import duplicates, raw_items, word_items
from ruler.benchmarks.ruler.tasks import FREQ_WORDS

_HEAD = FREQ_WORDS.template[:FREQ_WORDS.template.index("{context}")]
#: The instruction's last sentence, which the coded text follows.
TEXT_START = _HEAD[_HEAD.rindex("Find "):]
_QUESTION = "\nQuestion:"
_DOTS = re.compile(r"\.{2,}")


@dataclass(frozen=True)
class FweRow:
    coded: str  # the coded text, its words joined by single spaces
    ranks: dict[str, int]  # coded word -> frequency rank (1 + the words more frequent)


def read(text: str) -> FweRow:
    start = text.rfind(TEXT_START)
    start = start + len(TEXT_START) if start >= 0 else 0
    end = text.find(_QUESTION, start)
    words = text[start:end if end >= 0 else len(text)].split()
    counts = Counter(words)
    ordered = sorted(set(counts.values()), reverse=True)
    above, higher = {}, 0
    for c in ordered:  # competition ranking: ties share the best rank
        above[c] = higher + 1
        higher += sum(1 for v in counts.values() if v == c)
    return FweRow(coded=" ".join(words), ranks={w: above[c] for w, c in counts.items()})


def label(row: LabelRow, ans: Answer, found: Found) -> None:
    fwe = read(row.input)
    gold = {o.lower() for o in row.outputs}
    vocab = {w.lower(): r for w, r in fwe.ranks.items() if not _DOTS.fullmatch(w)}
    got = [i.lower() for i in word_items(ans.text, cut=ans.cut)]
    found.add("noise_token", any(_DOTS.fullmatch(p.strip(" \t\r\n'\"`()[]*,;:"))
                                 for p in raw_items(ans.text)))
    found.add("empty", not got)
    tokens = ans.lower.split()
    n = THRESHOLDS.fwe_copy_tokens
    coded = f" {fwe.coded} "
    found.add("copy_context", any(f" {' '.join(tokens[i:i + n])} " in coded
                                  for i in range(len(tokens) - n + 1)))
    out = [i for i in got if i not in vocab]
    if got and len(out) / len(got) >= 0.5:
        found.add("parametric")
        found.add("stopword", any(i in STOPWORDS for i in out))
    wrong = [vocab[i] for i in got if i in vocab and i not in gold]
    if wrong:
        found.add("inaccurate_aggregation")
        found.rank = min(wrong)
        found.add("near_rank", found.rank <= THRESHOLDS.near_rank)
    found.add("duplicated", duplicates(got))
