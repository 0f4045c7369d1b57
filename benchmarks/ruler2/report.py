"""RULERv2's family x difficulty table: mk / mv / qa by basic / easy / medium / hard.

RULERv2's 12 tasks are three families (multi-key NIAH, multi-value NIAH, QA) at four
difficulties each, named `<family>_<difficulty>` (mk_niah_basic ... qa_hard). Per length, each
cell is the task's score with its 95 % interval (as scores.json recorded it); a family's mean
over its difficulties and a difficulty's mean over the families are plain means of the task
scores, with the stratified bootstrap interval the report gives a length's mean
(`ruler.eval.metrics.intervals.weighted_mean_interval`), where every task of the mean has a score.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ruler.benchmarks.ruler.failure_modes.report_hooks import RulerFamilyReport
from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval, weighted_mean_interval
from ruler.eval.records.scores_record import CellScore
from ruler.eval.report.intervals import format_interval
from ruler.eval.report.run import Report

FAMILIES = {"mk_niah": "mk", "mv_niah": "mv", "qa": "qa"}
DIFFICULTIES = ("basic", "easy", "medium", "hard")

Cells = Mapping[tuple[str, int], CellScore]


def family_difficulty(task: str) -> tuple[str, str] | None:
    """("mk", "basic") for mk_niah_basic; None for a task outside the grid."""
    family, _, difficulty = task.rpartition("_")
    if family not in FAMILIES or difficulty not in DIFFICULTIES:
        return None
    return FAMILIES[family], difficulty


def _task(family: str, difficulty: str) -> str:
    name = next(k for k, v in FAMILIES.items() if v == family)
    return f"{name}_{difficulty}"


def _mean(cells: Cells, tasks: Sequence[str], L: int,
          key: str) -> tuple[float | None, Interval | None]:
    """The plain mean of the tasks' scores at L and its interval (None unless all scored)."""
    scores = [None if c is None else c.score for c in (cells.get((t, L)) for t in tasks)]
    if any(s is None for s in scores):
        return None, None
    rows = [cells[(t, L)].values or [] for t in tasks]
    interval = weighted_mean_interval(rows, [1.0] * len(rows), key=key) \
        if all(rows) else None
    return sum(s for s in scores if s is not None) / len(scores), interval


def grid(cells: Cells, lengths: Sequence[int], key: str = "") -> dict[int, dict[str, Any]]:
    """Per length: {"cells": {family: {difficulty: score}}, "family_mean": {family: score},
    "difficulty_mean": {difficulty: score}, "intervals": the same keys' [low, high]}."""
    out: dict[int, dict[str, Any]] = {}
    for L in lengths:
        entry: dict[str, Any] = {"cells": {}, "family_mean": {}, "difficulty_mean": {},
                                 "intervals": {"cells": {}, "family_mean": {},
                                               "difficulty_mean": {}}}
        for family in FAMILIES.values():
            for difficulty in DIFFICULTIES:
                cell = cells.get((_task(family, difficulty), L))
                entry["cells"].setdefault(family, {})[difficulty] = cell.score if cell else None
                entry["intervals"]["cells"].setdefault(family, {})[difficulty] = \
                    cell.ci95 if cell else None
        means = [("family", f, [_task(f, d) for d in DIFFICULTIES]) for f in FAMILIES.values()]
        means += [("difficulty", d, [_task(f, d) for f in FAMILIES.values()])
                  for d in DIFFICULTIES]
        for axis, name, tasks in means:
            mean, interval = _mean(cells, tasks, L, f"{key}/{axis}/{name}/{L}")
            entry[f"{axis}_mean"][name] = mean
            entry["intervals"][f"{axis}_mean"][name] = interval.to_json() if interval else None
        out[L] = entry
    return out


def _text(score: float | None, ci: list[float] | None) -> str:
    if score is None:
        return "—"
    interval = format_interval(Interval(ci[0], ci[1], "")) if ci else ""
    return f"{score:.2f}" + (f" {interval}" if interval else "")


def grid_markdown(cells: Cells, lengths: Sequence[int], key: str = "") -> list[str]:
    """The section's Markdown: one table per length."""
    lines = ["## RULERv2: family x difficulty", "",
             "mk: multi-key NIAH (mk_niah_*), mv: multi-value NIAH (mv_niah_*), qa: HotpotQA "
             "(qa_*). Each cell is a task's score `[95 % interval]`; Mean: the plain mean of "
             "the row's or column's task scores (given when all are scored).", ""]
    for L, g in grid(cells, lengths, key).items():
        ci = g["intervals"]
        lines += [f"### {format_length(L)}", "",
                  "| Family | " + " | ".join(DIFFICULTIES) + " | Mean |",
                  "|---" * (len(DIFFICULTIES) + 2) + "|"]
        for family in FAMILIES.values():
            lines.append(f"| {family} | " + " | ".join(
                _text(g["cells"][family][d], ci["cells"][family][d]) for d in DIFFICULTIES)
                + f" | {_text(g['family_mean'][family], ci['family_mean'][family])} |")
        lines += ["| **Mean** | " + " | ".join(
            _text(g["difficulty_mean"][d], ci["difficulty_mean"][d]) for d in DIFFICULTIES)
            + " | |", ""]
    return lines


class Ruler2Report(RulerFamilyReport):
    """RULERv2's report: the family x difficulty table under the task table."""

    def after_tasks(self, r: Report) -> list[str]:
        return grid_markdown(r.cells, r.lengths, key=r.config)

    def json(self, r: Report) -> dict[str, Any]:
        return {**super().json(r), "family_difficulty": {
            str(L): g for L, g in grid(r.cells, r.lengths, r.config).items()}}


REPORT = Ruler2Report()
