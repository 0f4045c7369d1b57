"""Common-words rows (`paper-analysis.md` §4.3 cwe, §4.4 copying and aggregation modes).

The task's instruction opens every block, the solved example's (if any) and the asked one
(its last occurrence); a block's list is the numbered text between the instruction and its
question, an example's answer the numbered words after its answer prefix ("... are:"). The
gold words, the other listed words, the example's words and the word count all come from the
row, so a task with another word count, more examples or none is read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruler.benchmarks.ruler.failure_modes.base import Answer, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.labels import STOPWORDS, THRESHOLDS
from ruler.benchmarks.ruler.failure_modes.text import (
    duplicates,
    first_index,
    is_numbered,
    word_items,
)
from ruler.benchmarks.ruler.tasks import COMMON_WORDS

_HEAD = COMMON_WORDS.template[:COMMON_WORDS.template.index("{context}")]
#: The first sentence of the template: where each block (example or asked task) starts.
BLOCK = _HEAD.split(". ")[0] + "."
_LIST_START = _HEAD.split(". ")[-1]  # "Memorize the ones that appear most often.\n"
_QUESTION = "\nQuestion:"
_MARKER = re.compile(r"(?:^|\s)\d+\.\s")


def numbered_words(text: str) -> list[str]:
    return [w.strip().lower() for w in _MARKER.split(text) if w.strip()]


@dataclass(frozen=True)
class CweRow:
    first_list: tuple[str, ...]  # the input's first numbered list (the example's, if any)
    example_lists: tuple[tuple[str, ...], ...]
    example_answers: tuple[tuple[str, ...], ...]
    gold: frozenset[str]  # G
    uncommon: frozenset[str]  # U: the asked list's other words
    example_only: frozenset[str]  # E_only: the example's words in neither G nor U
    in_context: frozenset[str]  # every word of every list and answer of the input
    phrases: tuple[str, ...]  # multi-word entries ("ad hoc"), kept whole when splitting


def _block_list(block: str) -> list[str]:
    start = block.find(_LIST_START)
    start = start + len(_LIST_START) if start >= 0 else 0
    end = block.find(_QUESTION, start)
    return numbered_words(block[start:end if end >= 0 else len(block)])


def read(text: str, outputs: tuple[str, ...]) -> CweRow:
    starts = [m.start() for m in re.finditer(re.escape(BLOCK), text)] or [0]
    blocks = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]
    lists = [_block_list(b) for b in blocks]
    answers = []
    for b in blocks[:-1]:
        q = b.find(_QUESTION)
        are = b.find("are:", q) if q >= 0 else -1
        answers.append(numbered_words(b[are + len("are:"):].split("\n")[0]) if are >= 0 else [])
    gold = frozenset(o.lower() for o in outputs)
    uncommon = frozenset(lists[-1]) - gold
    example = frozenset(w for ws in [*lists[:-1], *answers] for w in ws)
    every = example | frozenset(lists[-1]) | gold
    return CweRow(first_list=tuple(lists[0]), example_lists=tuple(map(tuple, lists[:-1])),
                  example_answers=tuple(map(tuple, answers)), gold=gold, uncommon=uncommon,
                  example_only=example - gold - uncommon, in_context=every,
                  phrases=tuple(sorted(w for w in every if " " in w)))


def scaffold(answer_prefix: str) -> frozenset[str]:
    """The answer prefix's words: an answer that repeats it ("The top 10 words ... are:")
    makes items of them, dropped before the shares are computed (§4.6)."""
    return frozenset(w.strip(".,:;").lower() for w in answer_prefix.split())


def label(row: LabelRow, ans: Answer, found: Found) -> None:
    cwe = read(row.input, row.outputs)
    numbered = is_numbered(ans.text)
    every = [i.lower() for i in word_items(ans.text, cwe.phrases, ans.cut)]
    drop = scaffold(row.answer_prefix)
    kept = [i for i in every if i not in drop]
    # The parametric test counts "the" as an item of a numbered answer (§4.6).
    for_parametric = every if numbered else kept

    found.add("empty", not kept)
    if cwe.example_lists and kept:
        n = min(THRESHOLDS.oneshot_items, len(kept))
        head = kept[:n]
        runs = [*cwe.example_lists, *cwe.example_answers]
        found.add("copy_oneshot", any(first_index(seq, head) >= 0 for seq in runs))
        found.add("copy_oneshot", _share(kept, cwe.example_only) >= 0.5)
    if len(kept) >= THRESHOLDS.start_list_items:
        run = kept[:THRESHOLDS.start_list_items]
        if first_index(cwe.first_list, run, THRESHOLDS.start_list_positions) >= 0:
            # the first list is the example's when there is one: that is copying the example
            found.add("copy_oneshot" if cwe.example_lists else "copy_input_start")

    out = [i for i in for_parametric if i not in cwe.in_context]
    if for_parametric and len(out) / len(for_parametric) >= 0.5:
        found.add("parametric")
        found.add("stopword", any(i in STOPWORDS for i in out))
    wrong = [i for i in kept if i not in cwe.gold]
    found.add("inaccurate_aggregation", bool(kept) and (
        _share(kept, cwe.uncommon) >= 0.5
        or (0 < ans.score < 1 and all(i in cwe.uncommon for i in wrong))))
    found.add("duplicated", duplicates(kept))


def _share(values: list[str], within: frozenset[str]) -> float:
    return sum(v in within for v in values) / len(values) if values else 0.0
