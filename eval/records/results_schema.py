"""What a results folder's run.json and scores.json hold, checked where they are read.

These files are input from disk: a run killed mid-copy, an editor's BOM, a hand edit. So every
reader goes through `read_run` / `read_scores`, which parse strictly (`ruler.kernel.strict_json`:
no key twice, no NaN, no runaway nesting), check that each field a reader uses has its shape,
and make the typed record (`RunRecord`, `ScoresRecord`): damage is one line naming the file and
the field, never a traceback in whichever reader meets it first. Fields the readers do not use
are not checked, and a field a later version adds is kept; an optional field that is absent
means "not recorded" (older files).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from ruler.catalog.variants import record_ok
from ruler.eval.failure_modes.record import CellFailures
from ruler.eval.records.health_record import HealthFacts
from ruler.eval.records.run_record import RunRecord
from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
from ruler.kernel.errors import RulerError
from ruler.kernel.strict_json import read_json

Check = Callable[[Any], bool]


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _positive(v: Any) -> bool:
    return _count(v) and v > 0


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _or_none(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _pair_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and len(v) == 2 and all(check(x) for x in v)


def _dict_of(check: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(_str(k) and check(x) for k, x in v.items())


_CELL_KEY = re.compile(r".+/[1-9][0-9]*")  # "task/L", as split files are named in records


def _files(v: Any) -> bool:
    """The split files a record covers: "task/L" -> content_sha256."""
    return isinstance(v, dict) and all(
        isinstance(k, str) and _CELL_KEY.fullmatch(k) and isinstance(sha, str)
        for k, sha in v.items())


def _dataset(v: Any) -> bool:
    return isinstance(v, dict) and _files(v.get("files")) and _or_none(_str)(v.get("spec")) \
        and _or_none(_str)(v.get("revision"))


def _share(v: Any) -> bool:
    return _number(v) and 0 <= v <= 1


def _row_score(v: Any) -> bool:
    """[index, value]: a row's value is 0..1 (`ruler.eval.metrics.specs.ROW_METRICS`)."""
    return isinstance(v, list) and len(v) == 2 and _count(v[0]) and _share(v[1])


def _depth_items(v: Any) -> bool:
    """"task/L" -> [[depth, value], ...]: a gold item's depth and its value, both 0..1."""
    return isinstance(v, dict) and all(
        isinstance(k, str) and _CELL_KEY.fullmatch(k) and _list_of(_pair_of(_share))(items)
        for k, items in v.items())


def _score(v: Any) -> bool:
    return v is None or (_number(v) and 0 <= v <= 100)


def _prompt_check(v: Any) -> bool:
    """`eval.records.run_record.PromptCheck`: counts, `unchecked` and `answered_as` (model name ->
    rows) absent from older files."""
    return v is None or (
        isinstance(v, dict) and all(_count(v.get(k)) for k in ("checked", "differ"))
        and _or_none(_count)(v.get("unchecked"))
        and _or_none(_dict_of(_count))(v.get("answered_as")))


def _predictions(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and _str(v.get("path")) and _str(v.get("sha256")))


def _selection(v: Any) -> bool:
    return isinstance(v, dict) and _list_of(_str)(v.get("tasks", [])) \
        and _list_of(_positive)(v.get("lengths", [])) \
        and _or_none(_positive)(v.get("limit")) and _or_none(_str)(v.get("by"))


#: field -> (check, required)
Fields = Mapping[str, tuple[Check, bool]]

CELL_FIELDS: Fields = {
    "task": (_str, True), "max_seq_length": (_positive, True), "metric": (_str, True),
    "score": (_score, True), "rows": (_count, True), "scored": (_count, True),
    "nulls": (_count, True), "skipped": (_count, True), "errors": (_count, True),
    "missing": (_count, True), "data_sha256": (_str, False),
    "skip_reasons": (_list_of(_str), False), "budget_exhausted": (_count, False),
    "budget_clamped": (_count, False), "redacted": (_count, False),
    "row_scores": (_list_of(_row_score), False), "ci95": (_or_none(_pair_of(_number)), False),
    "ci_method": (_or_none(_str), False), "unverified": (_count, False),
    "tied_by": (_dict_of(_count), False), "failures": (CellFailures.shape_ok, False),
}
SCORES_FIELDS: Fields = {
    "config": (_str, True), "dataset": (_dataset, True), "cells": (_list_of(_dict), True),
    "model": (_or_none(_str), False), "mode": (_or_none(_str), False),
    "missing": (_list_of(_str), False), "unknown": (_list_of(_str), False),
    "depth_items": (_depth_items, False), "depth_bins": (_or_none(_positive), False),
    "variant": (record_ok, False), "selection": (_selection, False),
    "benchmark": (_or_none(_str), False), "benchmark_package": (_or_none(_str), False),
    "axes": (_or_none(_dict_of(_str)), False), "language": (_or_none(_str), False),
    "suites": (_or_none(_list_of(_str)), False),
    "predictions": (_predictions, False), "serving": (_or_none(_list_of(_dict)), False),
    "prompt_check": (_prompt_check, False), "health": (HealthFacts.shape_ok, False),
}


def _max_model_len(v: Any) -> bool:
    return isinstance(v, dict) and _or_none(_positive)(v.get("used")) \
        and _or_none(_positive)(v.get("requested")) and _or_none(_str)(v.get("backend"))


RUN_FIELDS: Fields = {
    "dataset": (lambda v: _dataset(v) and _str(v.get("config")), True),
    "model": (_str, True), "backend": (_str, False), "backends": (_list_of(_str), False),
    "mode": (_or_none(_str), False), "limit": (_or_none(_positive), False),
    "chat_template_kwargs": (_or_none(_dict), False), "reasoning": (_or_none(_dict), False),
    "max_model_len": (_max_model_len, False), "serving": (_or_none(_list_of(_dict)), False),
    "prompt_template": (_or_none(_dict), False), "last_run": (_dict, False),
    "prompt_delivery": (_or_none(_str), False),
}


def _wrong(record: Mapping[str, Any], fields: Fields) -> list[str]:
    """The fields of `record` that are missing (when required) or of the wrong shape."""
    return [name for name, (check, required) in fields.items()
            if (name in record and not check(record[name])) or (required and name not in record)]


def check_scores(scores: Any, where: str) -> dict[str, Any]:
    """`scores` (parsed scores.json) if every field the readers use has its shape, else one
    RulerError line naming `where` and the field (a cell by its number and key)."""
    if not isinstance(scores, dict) or scores.get("format") != SCORES_FORMAT:
        found = scores.get("format") if isinstance(scores, dict) else type(scores).__name__
        raise RulerError(f"{where} is not a ruler scores file (format {found!r})")
    wrong = _wrong(scores, SCORES_FIELDS)
    if wrong:
        raise RulerError(f"{where}: missing or malformed {', '.join(wrong)}: restore it, or "
                         f"score the predictions again (`ruler score`)")
    seen = set()
    for n, cell in enumerate(scores["cells"], 1):
        wrong = _wrong(cell, CELL_FIELDS)
        if wrong:
            raise RulerError(f"{where}: cell {n} has missing or malformed {', '.join(wrong)}: "
                             f"restore it, or score the predictions again (`ruler score`)")
        key = f"{cell['task']}/{cell['max_seq_length']}"
        if key in seen:
            raise RulerError(f"{where}: cell {key} appears twice: restore it, or score the "
                             f"predictions again (`ruler score`)")
        seen.add(key)
    return scores


def check_run(run: Any, where: str) -> dict[str, Any]:
    """`run` (parsed run.json) if every field the readers use has its shape, else one
    RulerError line naming `where` and the field."""
    if not isinstance(run, dict):
        raise RulerError(f"{where} is not a ruler run record (a JSON object expected, found "
                         f"{type(run).__name__})")
    wrong = _wrong(run, RUN_FIELDS)
    if wrong:
        raise RulerError(f"{where}: missing or malformed {', '.join(wrong)}: restore it, or "
                         f"use another results folder")
    return run


def read_scores(path: str | Path) -> ScoresRecord:
    """A scores.json, parsed strictly and checked (`check_scores`)."""
    return ScoresRecord.from_json(check_scores(read_json(path), str(path)))


def read_run(path: str | Path) -> RunRecord:
    """A run.json, parsed strictly and checked (`check_run`)."""
    return RunRecord.from_json(check_run(read_json(path), str(path)))
