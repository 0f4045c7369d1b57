"""The fake backend's purposeful failures (`--fake-answers MODE`): answers that fail the way a
failure mode describes, made from the row as built, so that the labels can be checked against
what was meant (`ruler.benchmarks.ruler.failure_modes`); RULER's `FakeAnswers`.

Each mode answers the rows it applies to with its failure and every other row with the gold
answer (`Purposeful.label` None), so a run on all 13 tasks mixes both. What each mode answers
and the label (and flags) it means: docs/failure-modes.md, "Checking the labels".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ruler.benchmarks.ruler.failure_modes import cwe, fwe, niah, vt
from ruler.benchmarks.ruler.failure_modes.cell import family_of
from ruler.benchmarks.ruler.failure_modes.labeler import labels_family
from ruler.benchmarks.ruler.failure_modes.labels import THRESHOLDS
from ruler.benchmarks.ruler.failure_modes.qa import question_key
from ruler.benchmarks.ruler.failure_modes.text import collapse
from ruler.eval.backends.fake import FakeAnswers

#: The modes, in the order `--fake-answers` lists them (after gold, empty, none).
FAILURES = ("distractor", "partial", "duplicated", "oneshot", "stopwords", "other_chain",
            "truncated", "closed_book", "copy_start")

#: The columns a purposeful answer reads of a row.
COLUMNS = ("task", "metric", "input", "outputs", "answer_prefix", "question")


@dataclass(frozen=True)
class Purposeful:
    """An answer and what it was meant to be labelled: `label` (None: the gold answer, the
    mode does not apply to the row) and the flags it must carry besides."""

    text: str
    label: str | None = None
    flags: frozenset[str] = frozenset()


Row = Mapping[str, Any]
_Maker = Callable[[str, Row], Purposeful | None]


def answer(mode: str, family: str, row: Row) -> Purposeful:
    """`mode`'s answer to `row` (a row of task family `family`), or the gold one where the
    mode does not apply."""
    made = _MAKERS[mode](family, row)
    return made if made is not None else Purposeful(" ".join(row["outputs"]))


def _distractor(family: str, row: Row) -> Purposeful | None:
    refs = list(row["outputs"])
    if family == "niah":
        ns = niah.needles(row["input"])
        asked = {n.key_low for n in ns if n.value_low in {r.lower() for r in refs}}
        targets = [n for n in ns if n.key_low in asked]
        others = [n for n in ns if n.key_low not in asked]
        if not targets or not others:
            return None
        d, pick = min((abs(o.ord - t.ord), o.ord) for t in targets for o in others)
        value = ns[pick].value
        flags = {"vicinity"} if d <= THRESHOLDS.vicinity_needles else set()
        return Purposeful(value, "distractor_value", frozenset(flags))
    if family == "common_words_extraction":
        c = cwe.read(row["input"], tuple(refs))
        main = [w for w in dict.fromkeys(_main_list(row["input"])) if w in c.uncommon]
        # those listed last first: the list's first words in order would be a copy of the
        # input's start where no solved example precedes the list (num_fewshot 0)
        main.reverse()
        return Purposeful(" ".join(main[:len(refs)]), "inaccurate_aggregation") if main else None
    if family == "freq_words_extraction":
        f = fwe.read(row["input"])
        gold = {r.lower() for r in refs}
        ranked = sorted((r, w) for w, r in f.ranks.items() if w.lower() not in gold and r > 1)
        if not ranked:
            return None
        flags = {"near_rank"} if ranked[0][0] <= THRESHOLDS.near_rank else set()
        return Purposeful(" ".join(w for _, w in ranked[:len(refs)]), "inaccurate_aggregation",
                          frozenset(flags))
    return None


def _main_list(text: str) -> list[str]:
    start = text.rfind(cwe.BLOCK)
    return cwe._block_list(text[max(start, 0):])


_PARTIAL_LABEL = {"niah": "incomplete_set", "variable_tracking": "incomplete_chain",
                  "common_words_extraction": "inaccurate_aggregation"}


def _partial(family: str, row: Row, twice: bool = False) -> Purposeful | None:
    refs = list(row["outputs"])
    if family not in _PARTIAL_LABEL or len(refs) < 2:
        return None
    half = refs[:max(1, len(refs) // 2)]
    flags = frozenset({"duplicated"}) if twice else frozenset()
    return Purposeful(" ".join(half * (2 if twice else 1)), _PARTIAL_LABEL[family], flags)


def _oneshot(family: str, row: Row) -> Purposeful | None:
    if family == "variable_tracking":
        names = vt.read(row["input"], tuple(row["outputs"])).example_answer
        return Purposeful(" ".join(names), "copy_oneshot") if names else None
    if family == "common_words_extraction":
        answers = cwe.read(row["input"], tuple(row["outputs"])).example_answers
        if not answers or not answers[0]:
            return None
        return Purposeful(" ".join(f"{n}. {w}" for n, w in enumerate(answers[0], 1)),
                          "copy_oneshot")
    return None


_AGGREGATING = {"common_words_extraction", "freq_words_extraction"}


def _stopwords(family: str, row: Row) -> Purposeful:
    if family in _AGGREGATING:
        return Purposeful("the an a", "parametric", frozenset({"stopword"}))
    return Purposeful("the an a", "empty")


def _other_chain(family: str, row: Row) -> Purposeful | None:
    if family != "variable_tracking":
        return None
    read = vt.read(row["input"], tuple(row["outputs"]))
    if not read.others:
        return None
    roots = vt.chains(row["input"][row["input"].rfind(vt.INSTRUCTION):])
    first_other = roots[read.others[0]]
    chain = [n for n in read.others if roots[n] == first_other]
    return Purposeful(" ".join(chain), "other_chain")


def _truncated(family: str, row: Row) -> Purposeful | None:
    if family != "niah":
        return None
    kind_of = {n.value: n.kind for n in niah.needles(row["input"])}
    kinds = [kind_of.get(v) for v in row["outputs"]]
    if any(kind not in ("uuids", "numbers") for kind in kinds):
        return None
    cut = [v[:18] if kind == "uuids" else v[:5] for v, kind in zip(row["outputs"], kinds)]
    return Purposeful(" ".join(cut),
                      "incomplete_value" if "uuids" in kinds else "partial_number")


_SYLLABLES = ("ka", "lo", "mer", "vin", "tor", "qua", "zel", "dru", "fen", "osh", "pra", "wix")


def closed_book_guess(question: str) -> str:
    """A made-up name from the question alone: what a model that ignores the context answers
    the same with and without it, found in no document."""
    digest = hashlib.sha256(question_key(question).encode()).digest()
    words = ["".join(_SYLLABLES[b % len(_SYLLABLES)] for b in digest[k:k + 3]).capitalize()
             for k in (0, 3)]
    return " ".join(words)


def _closed_book(family: str, row: Row) -> Purposeful:
    guess = closed_book_guess(row["question"])
    label = {"qa": "not_in_context"}.get(family) or (
        "parametric" if family in _AGGREGATING else "empty")
    return Purposeful(guess, label)


def _copy_start(family: str, row: Row) -> Purposeful:
    # niah's and vt's starts hold no value and no name: empty answers, that copy; cwe's is
    # its solved example's, or the list itself where none precedes it (num_fewshot 0)
    label, flags = {
        "variable_tracking": ("empty", {"copy_oneshot"}),
        "common_words_extraction": ("copy_oneshot", set()),
        "freq_words_extraction": ("copy_input_start", set()),
        "qa": ("copy_input_start", set()), "niah": ("empty", {"copy_input_start"})}[family]
    if family == "common_words_extraction" and not any(
            cwe.read(row["input"], tuple(row["outputs"])).example_answers):
        label = "copy_input_start"
    return Purposeful(collapse(row["input"])[:60], label, frozenset(flags))


_MAKERS: dict[str, _Maker] = {
    "distractor": _distractor, "partial": _partial,
    "duplicated": lambda family, row: _partial(family, row, twice=True),
    "oneshot": _oneshot, "stopwords": _stopwords, "other_chain": _other_chain,
    "truncated": _truncated, "closed_book": _closed_book, "copy_start": _copy_start,
}
assert tuple(_MAKERS) == FAILURES


def _row_answer(mode: str, row: Row) -> str | None:
    """`mode`'s answer to a row of a family the labels read (None: another's, the gold)."""
    family = family_of(row["task"])
    if family is None or not labels_family(family):
        return None
    return answer(mode, family, row).text


#: RULER's purposeful failures, for `--backend fake --fake-answers MODE`.
FAKE_ANSWERS = FakeAnswers(FAILURES, COLUMNS, _row_answer)
