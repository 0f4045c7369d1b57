"""`ruler report`'s failure-mode section: per task x length, how the answered rows split into
right ones and each primary label (counts, shares with their 95 % Wilson intervals), the
flags' counts, and what `paper-analysis.md` §4.7 asks per cell: the distractors' distance
from the target against chance, the frequency ranks of fwe's wrong words, and, given the same
model's run on the config's --no-context variant (`ruler report RUN --no-context RUN0`), how
many wrong QA rows answer what the model answers without the documents.

Read from scores.json's cells (`CellScore.failures`); the coincidence pairs the two runs' QA
rows by index after checking each pair asks the same question (`QaAnswer.question`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from ruler.benchmarks.ruler.failure_modes.labels import (
    CORRECT,
    DEFINITIONS,
    PRECEDENCE,
    SUB_FLAG_NAMES,
    THRESHOLDS,
    primary,
)
from ruler.benchmarks.ruler.failure_modes.text import token_f1
from ruler.catalog.benchmarks import task_rank
from ruler.eval.failure_modes.record import QaAnswer, RowFailure
from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval, wilson
from ruler.eval.records.scores_record import CellScore, ScoresRecord
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import md_code, md_text

#: Where the labels are explained (docs/failure-modes.md, on the documentation site).
DOCS_PAGE = "docs/failure-modes.md"


@dataclass(frozen=True)
class Coincidence:
    """A QA cell beside its no-context twin: wrong rows with a no-context answer (`paired`),
    those equal to it (`equal`), and those near it (`near`: token F1 >= 0.8, not equal)."""

    paired: int
    equal: int
    near: int

    def to_json(self) -> dict[str, int]:
        return {"paired": self.paired, "equal": self.equal, "near": self.near}


@dataclass(frozen=True)
class FailureCell:
    """One task x length: its answered rows' labels and flags."""

    task: str
    length: int
    family: str
    answered: int
    rows: tuple[RowFailure, ...]
    coincidence: Coincidence | None = None

    @property
    def labels(self) -> Counter[str]:
        counts = Counter(r.label for r in self.rows)
        counts[CORRECT] = self.answered - len(self.rows)
        return counts

    @property
    def flags(self) -> Counter[str]:
        return Counter(f for r in self.rows for f in r.flags)

    def share(self, label: str) -> tuple[int, Interval | None]:
        n = self.labels[label]
        return n, (wilson(n, self.answered) if self.answered else None)

    @property
    def distances(self) -> list[int]:
        return [r.distance for r in self.rows if r.distance is not None]

    @property
    def chance(self) -> float | None:
        """The mean chance that a uniformly picked distractor is in the vicinity, over the
        rows whose distractor's distance was measured."""
        found = [r.chance for r in self.rows if r.chance is not None]
        return sum(found) / len(found) if found else None

    @property
    def ranks(self) -> Counter[int]:
        return Counter(r.rank for r in self.rows if r.rank is not None)


@dataclass
class FailureReport:
    cells: list[FailureCell] = field(default_factory=list)
    no_context: str | None = None  # the no-context run's results, when given

    @property
    def tasks(self) -> list[str]:
        return sorted({c.task for c in self.cells}, key=task_rank)

    @property
    def lengths(self) -> list[int]:
        return sorted({c.length for c in self.cells})

    def cell(self, task: str, length: int) -> FailureCell | None:
        return next((c for c in self.cells if c.task == task and c.length == length), None)


def failure_report(cells: Iterable[CellScore]) -> FailureReport | None:
    """The section's content from scores.json's cells; None when no cell is labelled (older
    scores, another benchmark's rows)."""
    found = [FailureCell(task=c.task, length=int(c.max_seq_length), family=c.failures.family,
                         answered=c.failures.labelled, rows=tuple(c.failures.rows))
             for c in cells if c.failures is not None]
    if not found:
        return None
    return FailureReport(sorted(found, key=lambda c: (task_rank(c.task), c.length)))


def with_no_context(report: FailureReport, run: ScoresRecord, baseline: ScoresRecord,
                    where: str) -> FailureReport:
    """`report` with each wrong QA row that answers what the same model answers without the
    documents (`baseline`, its run on the --no-context variant) flagged
    `no_context_coincidence` (its primary label by precedence) or `near`. Rows are paired by
    index; a pair whose questions differ is refused (another build's rows)."""
    ours, theirs = (
        {c.key: c.failures.answers for c in scores.cells
         if c.failures is not None and c.failures.answers is not None}
        for scores in (run, baseline))
    if not theirs and ours:
        raise RulerError(f"{where} records no QA answers (scored before failure modes were "
                         f"labelled, or without qa tasks): score it again with this ruler "
                         f"(`ruler score`) to compare its answers")
    both = ours.keys() & theirs.keys()
    return FailureReport([_coincide(c, ours[c.task, c.length], theirs[c.task, c.length], where)
                          if (c.task, c.length) in both else c for c in report.cells],
                         no_context=where)


def _coincide(cell: FailureCell, answers: Sequence[QaAnswer], baseline: Sequence[QaAnswer],
              where: str) -> FailureCell:
    mine = {a.index: a for a in answers}
    blind = {a.index: a for a in baseline}
    rows, paired, equal, near = [], 0, 0, 0
    for r in cell.rows:
        a, b = mine.get(r.index), blind.get(r.index)
        if a is None or b is None:
            rows.append(r)
            continue
        if a.question != b.question:
            raise RulerError(f"{where}: {cell.task}/{cell.length} row {r.index} asks another "
                             f"question than this run's row: the baseline must be the "
                             f"--no-context variant of the same build (same seed and samples)")
        paired += 1
        flags = list(r.flags)
        if a.answer and a.answer == b.answer:
            equal += 1
            flags.append("no_context_coincidence")
        elif a.answer and b.answer and token_f1(a.answer, b.answer) >= THRESHOLDS.near_f1:
            near += 1
            flags.append("near")
        modes = [f for f in flags if f not in SUB_FLAG_NAMES]
        ordered = sorted(set(modes), key=PRECEDENCE.index) + sorted(
            set(flags) - set(modes))
        rows.append(replace(r, label=primary(modes), flags=ordered))
    return replace(cell, rows=tuple(rows), coincidence=Coincidence(paired, equal, near))


# --- rendering ------------------------------------------------------------------------------

def _labels_of(report: FailureReport, task: str) -> list[str]:
    seen = {label for c in report.cells if c.task == task for label, n in c.labels.items() if n}
    return [CORRECT] + [m for m in PRECEDENCE if m in seen]


def _share_text(cell: FailureCell | None, label: str) -> str:
    if cell is None:
        return "—"
    n, ci = cell.share(label)
    if not n or ci is None:
        return "0"
    return f"{n} · {100 * n / cell.answered:.1f} % [{ci.low:.1f}, {ci.high:.1f}]"


def markdown(report: FailureReport) -> list[str]:
    """The report.md section."""
    t = THRESHOLDS
    lines = ["## Failure modes", "",
             "Why rows fail (the paper's Section 5 taxonomy, made operational: "
             f"{md_code(DOCS_PAGE)}). Each answered row the task's metric does not score 1 "
             "has one primary label, the first of the modes it shows in the order below; "
             "cells give the label's rows, their share of the answered rows and its 95 % "
             "Wilson interval. Right rows are `correct`, so each column sums to 100 %. "
             f"Definitions {md_code(DEFINITIONS)}; thresholds (ours): vicinity within "
             f"{t.vicinity_needles} needles, a truncated UUID shares {t.uuid_prefix}+ "
             f"characters, a partial number {t.number_prefix}+ leading digits, a copied start "
             f"{t.start_copy_chars}+ characters of the input's first {t.start_window}, copied "
             f"context {t.context_copy_chars}+ characters and {t.context_copy_share:.0%} of "
             f"the answer, fwe near rank <= {t.near_rank}, QA near F1 >= {t.near_f1}.", ""]
    if report.no_context:
        lines += [f"QA rows are compared with the same model's answers without the documents "
                  f"({md_code(report.no_context)}): a wrong row whose normalised answer equals "
                  f"it is `no_context_coincidence`.", ""]
    else:
        lines += ["QA's `no_context_coincidence` needs the same model's run on the config's "
                  "--no-context variant: `ruler report RUN --no-context RUN0`.", ""]
    cols = [format_length(L) for L in report.lengths]
    right = [t for t in report.tasks if not any(c.rows for c in report.cells if c.task == t)]
    if right:
        lines += ["Every answered row right (`correct`): " + ", ".join(map(md_text, right))
                  + ".", ""]
    for task in report.tasks:
        if task in right:
            continue
        lines += [f"**{md_text(task)}**", "", "| Label | " + " | ".join(cols) + " |",
                  "|---" * (len(cols) + 1) + "|"]
        for label in _labels_of(report, task):
            lines.append(f"| {label} | " + " | ".join(
                _share_text(report.cell(task, L), label) for L in report.lengths) + " |")
        details = [d for L in report.lengths for d in _details(report.cell(task, L))]
        lines += ([""] + details if details else []) + [""]
    return lines


def _details(cell: FailureCell | None) -> list[str]:
    """The flags and §4.7's measures of one cell, as list items."""
    if cell is None or not cell.rows:
        return []
    at = f"{format_length(cell.length)}:"
    flags = cell.flags
    out = []
    sub = [f"`{f}` {flags[f]} ({100 * flags[f] / cell.answered:.1f} %)"
           for f in sorted(SUB_FLAG_NAMES) if flags[f]]
    if sub:
        out.append(f"- {at} flags (rows, share of the answered) " + ", ".join(sub))
    if cell.distances:
        hist = Counter(cell.distances)
        near = sum(1 for d in cell.distances if d <= THRESHOLDS.vicinity_needles)
        chance = cell.chance
        out.append(f"- {at} distractor distance (needles) "
                   + ", ".join(f"{d}: {n}" for d, n in sorted(hist.items()))
                   + f"; vicinity {near} of {len(cell.distances)}"
                   + (f" (chance {100 * chance:.0f} %)" if chance is not None else ""))
    if cell.ranks:
        out.append(f"- {at} fwe rank of the best wrong word "
                   + ", ".join(f"{r}: {n}" for r, n in sorted(cell.ranks.items())))
    if cell.coincidence is not None:
        c = cell.coincidence
        out.append(f"- {at} no-context coincidence {c.equal} of {c.paired} wrong rows with a "
                   f"no-context answer"
                   + (f" ({100 * c.equal / c.paired:.1f} %)" if c.paired else "")
                   + f", near {c.near}")
    return out


def to_json(report: FailureReport) -> dict[str, Any]:
    """report.json's `failure_modes`."""
    return {
        "definitions": DEFINITIONS, "thresholds": THRESHOLDS.to_json(),
        "no_context": report.no_context,
        "cells": [{
            "task": c.task, "max_seq_length": c.length, "family": c.family,
            "answered": c.answered,
            "labels": {label: {"count": n, "share": round(n / c.answered, 6),
                               "ci95": wilson(n, c.answered).to_json()}
                       for label, n in sorted(c.labels.items(),
                                              key=lambda kv: _rank(kv[0])) if n},
            "flags": dict(sorted(c.flags.items())),
            "distances": dict(sorted(Counter(c.distances).items())),
            "vicinity_chance": None if c.chance is None else round(c.chance, 6),
            "fwe_ranks": dict(sorted(c.ranks.items())),
            "no_context": c.coincidence.to_json() if c.coincidence else None,
        } for c in report.cells if c.answered],
    }


def _rank(label: str) -> int:
    return -1 if label == CORRECT else PRECEDENCE.index(label)
