"""The report's 95 % intervals: per cell (as scores.json recorded them), per length, Avg. and
wAvg., and the lengths where the effective-length decision is uncertain.

The per-length and averaged intervals are stratified bootstraps over the rows of every cell
(`ruler.eval.metrics.intervals.weighted_mean_interval`) with the weights the headline numbers use:
equal per task within a length; for Avg. and wAvg. each length's weight (`eval.metrics.aggregate`)
divided by its tasks. They are given exactly where the headline numbers are: a length's interval
where its mean is, the averages' where the averages are (a complete selection). Scores written
before the cells carried `row_scores` have no intervals (None), and the report shows none.

One statistic has one interval: where two of these numbers weigh the same rows alike (at a
single length, its mean, Avg. and both wAvg. are one number), they share the first one's
interval instead of each drawing its own bootstrap (three intervals of one number, differing
by their seeds only, would say three things about it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ruler.eval.metrics.aggregate import Summary, length_weights
from ruler.eval.metrics.intervals import (
    Interval,
    uncertain_lengths,
    weighted_mean_interval,
)
from ruler.eval.records.scores_record import CellScore


@dataclass(frozen=True)
class ReportIntervals:
    cells: dict[tuple[str, int], Interval]  # cells with a recorded interval
    by_length: dict[int, Interval | None]  # None: no mean at that length, or no rows recorded
    avg: Interval | None
    wavg_inc: Interval | None
    wavg_dec: Interval | None
    uncertain: list[int]  # lengths whose interval contains the threshold
    method: str  # how they are made, in words (`method_text`)

    def to_json(self) -> dict[str, Any]:
        def j(i: Interval | None) -> list[float] | None:
            return None if i is None else i.to_json()

        scores: dict[str, dict[str, list[float]]] = {}
        for (t, L), i in self.cells.items():
            scores.setdefault(t, {})[str(L)] = i.to_json()
        return {"method": self.method, "confidence": 0.95, "scores": scores,
                "mean_by_length": {str(L): j(i) for L, i in self.by_length.items()},
                "avg": j(self.avg), "wavg_inc": j(self.wavg_inc), "wavg_dec": j(self.wavg_dec),
                "uncertain_lengths": self.uncertain}


def cell_interval(cell: CellScore) -> Interval | None:
    """The interval scores.json recorded for a cell (None: older scores, or no answered row)."""
    ci = cell.ci95
    return None if not ci else Interval(float(ci[0]), float(ci[1]), cell.ci_method or "")


def _rows(cell: CellScore | None) -> list[float] | None:
    return (cell.values or None) if cell else None


def report_intervals(cells: Mapping[tuple[str, int], CellScore], tasks: Sequence[str],
                     lengths: Sequence[int], summary: Summary, method: str,
                     key: str = "") -> ReportIntervals | None:
    """The intervals of a report's numbers; None when no cell recorded its rows (older scores).
    `method` says how they are made (`method_text`); `key` seeds the bootstraps (the config),
    so a report is the same bytes each time."""
    rows = {k: r for k, c in cells.items() if (r := _rows(c)) is not None}
    if not rows:
        return None
    # statistic (cell -> share of the weight) -> its interval: one number, one interval
    drawn: dict[frozenset[tuple[tuple[str, int], float]], Interval] = {}

    def interval(of: Sequence[tuple[str, int]], weights: Sequence[float], seed: str) -> Interval:
        total = sum(weights)
        statistic = frozenset((k, round(w / total, 12)) for k, w in zip(of, weights) if w)
        if statistic not in drawn:
            drawn[statistic] = weighted_mean_interval([rows[k] for k in of], weights, key=seed)
        return drawn[statistic]

    by_length: dict[int, Interval | None] = {}
    for L in lengths:
        if summary.by_length.get(L) is None or any((t, L) not in rows for t in tasks):
            by_length[L] = None
        else:
            by_length[L] = interval([(t, L) for t in tasks], [1.0] * len(tasks),
                                    f"{key}/mean/{L}")
    averages: dict[str, Interval | None] = {"avg": None, "inc": None, "dec": None}
    if summary.avg is not None and all(by_length[L] is not None for L in lengths):
        stacked = [(t, L) for L in lengths for t in tasks]
        given: list[tuple[str, Mapping[int, float]]] = [
            ("avg", {L: 1 / len(lengths) for L in lengths})]
        if summary.wavg_inc is not None:  # a benchmark without weighted averages has none
            given += [("inc", length_weights(lengths, True)),
                      ("dec", length_weights(lengths, False))]
        for name, weights in given:
            averages[name] = interval(
                stacked, [weights[L] / len(tasks) for L in lengths for _ in tasks],
                f"{key}/{name}")
    uncertain = [] if summary.partial or not summary.has_effective_length \
        else uncertain_lengths(by_length, summary.threshold)
    return ReportIntervals(
        cells={k: i for k, c in cells.items() if (i := cell_interval(c)) is not None},
        by_length=by_length, avg=averages["avg"], wavg_inc=averages["inc"],
        wavg_dec=averages["dec"], uncertain=uncertain, method=method)


def format_interval(i: Interval | None) -> str:
    return "" if i is None else f"[{i.low:.1f}, {i.high:.1f}]"
