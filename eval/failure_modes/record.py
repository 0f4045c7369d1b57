"""scores.json's failure labels: per (task, L) cell, each wrong row's primary label and flags,
and for QA every answered row's normalised answer (what the report pairs with a no-context
run's). Typed records (`kernel.json_record`); `CellFailures.shape_ok` is the check
`eval.records.results_schema` runs on a cell's `failures`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from ruler.kernel.json_record import Decode, FrozenRecord, record_list


@dataclass(frozen=True, kw_only=True)
class RowFailure(FrozenRecord):
    """A wrong row: its index in the split file, primary label, flags (`labels`), and the
    measures of some flags (left out when they do not apply)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"distance", "char_distance", "chance",
                                                    "rank"})

    index: int
    label: str
    flags: list[str] = field(default_factory=list)
    distance: int | None = None  # distractor_value: needles from the target
    char_distance: float | None = None  # ... characters from it / len(input)
    chance: float | None = None  # ... vicinity rate of a uniformly picked distractor
    rank: int | None = None  # coded words: frequency rank of the best wrong one


@dataclass(frozen=True, kw_only=True)
class QaAnswer(FrozenRecord):
    """A QA row's answer as the no-context coincidence compares it: SQuAD-normalised, with a
    digest of the row's question (`qa.question_key`), so that two runs' rows are paired only
    when they ask the same thing."""

    index: int
    answer: str
    question: str


@dataclass(frozen=True, kw_only=True)
class CellFailures(FrozenRecord):
    """A cell's labels: `labelled` answered rows were looked at, `rows` are the wrong ones
    (the others are right: no failure label), under the definitions `definitions` names
    (`labels.DEFINITIONS`)."""

    DECODE: ClassVar[Mapping[str, Decode]] = {
        "rows": record_list(RowFailure.from_json), "answers": record_list(QaAnswer.from_json)}
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"answers"})

    definitions: str
    family: str
    labelled: int
    rows: list[RowFailure] = field(default_factory=list)
    answers: list[QaAnswer] | None = None  # qa only

    @classmethod
    def shape_ok(cls, saved: Any) -> bool:
        """Whether a cell's `failures` has this record's shape (None: not recorded)."""
        if saved is None:
            return True
        if not isinstance(saved, dict) or not _count(saved.get("labelled")) or not all(
                isinstance(saved.get(k), str) for k in ("definitions", "family")):
            return False
        rows, answers = saved.get("rows", []), saved.get("answers")
        return isinstance(rows, list) and all(_row_ok(r) for r in rows) and (
            answers is None or isinstance(answers, list) and all(_answer_ok(a) for a in answers))


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _row_ok(r: Any) -> bool:
    return isinstance(r, dict) and _count(r.get("index")) and isinstance(r.get("label"), str) \
        and isinstance(r.get("flags", []), list) \
        and all(isinstance(f, str) for f in r.get("flags", [])) \
        and all(_number_or_none(r.get(k)) for k in ("distance", "char_distance", "chance",
                                                     "rank"))


def _answer_ok(a: Any) -> bool:
    return isinstance(a, dict) and _count(a.get("index")) \
        and isinstance(a.get("answer"), str) and isinstance(a.get("question"), str)
