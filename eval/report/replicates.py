"""`ruler report RUN RUN ...`: runs of one model on replicates of one tokenizer config, pooled.

A replicate config (`ruler build --replicates K`, catalog.variants.Replicate) redraws every
sample of the default config from other seeds, so a model's score on replicates 1..K (and on
the default config, replicate 0 of the draw) shows how much the score moves with the draw of
the benchmark's samples alone. Each run is reported as `ruler report` reports it alone
(eval.report.run.build_report); pooled, every task x length score, the mean per length, Avg. and
wAvg. become the mean over the runs with the between-replicate spread: the sample standard
deviation (n - 1) and the min..max of the runs' numbers. A number one run withholds (an
incomplete cell, a partial run) is withheld pooled too, so a pooled number is always over
every run.

Only like runs pool: one model, one tokenizer's default config and its replicates (from the
manifest's `variant` entry that scores.json records, never from the config's name, which a
Hub tokenizer's `org--name` could fake), one prompt mode, each replicate once, the same rows
asked per cell. Anything else is refused in one line naming the two runs.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from ruler.catalog.benchmarks import in_task_order
from ruler.catalog.variants import NO_VARIANT, Replicate, variant_from_record
from ruler.eval.metrics.aggregate import format_length, summarize
from ruler.eval.records.scores_record import ScoresRecord
from ruler.eval.report.run import Report
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import md_code, md_text

SPREAD_TEXT = (
    "Each number is the mean over the {n} runs, one per replicate config, with the "
    "between-replicate spread: ± the sample standard deviation (n - 1) of the runs' numbers and "
    "[min..max] of them. A cell, length or average that any run withholds (rows missing or "
    "failed) is withheld here too (n/a). The per-row intervals of each run are in its own "
    "report (`ruler report RUN`).")


@dataclass(frozen=True)
class Spread:
    """One number over the replicates: each run's value, in the runs' order."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def text(self, digits: int = 2) -> str:
        """`mean ± sd [min..max]`."""
        return (f"{self.mean:.{digits}f} ± {self.sd:.{digits}f} "
                f"[{self.low:.{digits}f}..{self.high:.{digits}f}]")

    def to_json(self) -> dict[str, Any]:
        return {"mean": round(self.mean, 4), "sd": round(self.sd, 4),
                "min": round(self.low, 4), "max": round(self.high, 4),
                "values": [round(v, 4) for v in self.values]}


def _spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of every run's value; None when any run has none."""
    known = [v for v in values if v is not None]
    return None if len(known) < len(values) else Spread(tuple(known))


@dataclass(frozen=True)
class ReplicateRun:
    """One run given to the report: where it came from, its replicate and its own report."""

    where: str
    replicate: int  # 0: the tokenizer's default config
    report: Report

    @property
    def label(self) -> str:
        return "default" if self.replicate == 0 else f"rep{self.replicate}"


@dataclass
class PooledReport:
    model: str | None
    config: str  # the tokenizer's default config, whose replicates the runs are
    mode: str | None
    runs: list[ReplicateRun]  # by replicate
    tasks: list[str]
    lengths: list[int]
    cells: dict[tuple[str, int], Spread | None]
    by_length: dict[int, Spread | None]
    averages: dict[str, Spread | None]  # "avg", "wavg_inc", "wavg_dec"
    threshold: float
    effective_label: str  # the effective length of the mean per length

    @property
    def mean_label(self) -> str:
        return self.runs[0].report.mean_label

    @property
    def withheld(self) -> list[str]:
        """Per run, the cells it leaves incomplete (why a pooled number is n/a)."""
        return [f"{run.label} ({run.where}): {', '.join(run.report.incomplete_labels())}"
                for run in self.runs if run.report.incomplete]


def replicate_of(scores: ScoresRecord, where: str) -> tuple[str, int]:
    """The tokenizer config a run's config is a replicate of, and the replicate (0: the
    default config); refuses a run on another kind of variant."""
    if scores.variant is None:
        raise RulerError(f"{where} records no build variant (scored by an older ruler): re-score "
                         f"it with `ruler score` to pool it with other replicates")
    variant = variant_from_record(scores.variant)
    config = scores.config
    if variant == NO_VARIANT:
        return config, 0
    if isinstance(variant, Replicate):
        return variant.base_config(config), variant.index
    raise RulerError(f"{where} is a run on config {config!r}, a {variant.field} variant: only "
                     f"a tokenizer's default config and its replicates (`ruler build "
                     f"--replicates K`) pool; report it alone")


def pool_reports(runs: Sequence[tuple[str, ScoresRecord, Report]]) -> PooledReport:
    """Pool the reports of runs on replicates: (where, scores.json, its report) per run."""
    if len(runs) < 2:
        raise RulerError("pooling replicates needs two runs or more")
    first_where, first, _ = runs[0]
    base, _ = replicate_of(first, first_where)
    seen: dict[int, str] = {}
    pooled: list[ReplicateRun] = []
    for where, scores, report in runs:
        config, index = replicate_of(scores, where)
        _check_alike(first_where, where, "tokenizer config", base, config)
        if index in seen:
            raise RulerError(f"{seen[index]} and {where} are both runs on config "
                             f"{scores.config!r}: give each replicate once")
        seen[index] = where
        _check_alike(first_where, where, "model", first.model, scores.model)
        _check_alike(first_where, where, "prompt mode", first.mode, scores.mode)
        pooled.append(ReplicateRun(where, index, report))
    pooled.sort(key=lambda run: run.replicate)
    _check_same_rows(pooled)

    tasks = in_task_order({t for run in pooled for t in run.report.tasks})
    lengths = sorted({L for run in pooled for L in run.report.lengths})
    cells = {(t, L): _spread([_cell_score(run.report, t, L) for run in pooled])
             for t in tasks for L in lengths}
    # A length's mean is over the same tasks in every run, or withheld.
    same_tasks = all(run.report.tasks == tasks for run in pooled)
    by_length = {L: _spread([run.report.summary.by_length.get(L) if same_tasks else None
                             for run in pooled]) for L in lengths}
    same_lengths = all(run.report.lengths == lengths for run in pooled)
    averages = {name: _spread([getattr(run.report.summary, name) if same_tasks and same_lengths
                               else None for run in pooled])
                for name in ("avg", "wavg_inc", "wavg_dec")}
    threshold = pooled[0].report.summary.threshold
    effective = summarize({L: s.mean if s else None for L, s in by_length.items()}, threshold,
                          partial=any(s is None for s in by_length.values()),
                          aggregation=pooled[0].report.summary.aggregation)
    return PooledReport(first.model, base, first.mode, pooled, tasks, lengths,
                        cells, by_length, averages, threshold, effective.effective_label)


def _check_alike(first: str, where: str, what: str, theirs: Any, ours: Any) -> None:
    if ours != theirs:
        raise RulerError(f"{first} and {where} differ in {what} ({theirs!r} vs {ours!r}): "
                         f"replicates pool runs of one model on one tokenizer config, in one "
                         f"prompt mode")


def _cell_score(report: Report, task: str, L: int) -> float | None:
    c = report.cells.get((task, L))
    return c.score if c is not None and c.complete else None


def _check_same_rows(runs: list[ReplicateRun]) -> None:
    """Refuse runs that asked for other numbers of rows of a cell (another --limit or sample
    count): their scores would not be draws of the same measurement."""
    asked: dict[tuple[str, int], tuple[int, str]] = {}
    for run in runs:
        for key, c in run.report.cells.items():
            rows, where = asked.setdefault(key, (c.rows, run.where))
            if rows != c.rows:
                raise RulerError(f"{where} asked for {rows} rows of {key[0]} @ "
                                 f"{format_length(key[1])}, {run.where} for {c.rows}: "
                                 f"replicates pool runs of the same sample count and --limit")


def _text(s: Spread | None) -> str:
    return "n/a" if s is None else s.text()


def to_markdown(p: PooledReport) -> str:
    n = len(p.runs)
    cols = [format_length(L) for L in p.lengths]
    head = [f"# {md_text(p.runs[0].report.title)} results over {n} replicates: "
            f"{md_text(p.model or 'unknown model')}", "",
            f"Tokenizer config {md_code(p.config)}"
            + (f", prompt mode {md_text(p.mode)}" if p.mode else "") + "; runs: "
            + ", ".join(f"{run.label} = {md_code(run.report.config)} ({md_text(run.where)})"
                        for run in p.runs)
            + ".", "", SPREAD_TEXT.format(n=n), ""]
    summary = ["| Over replicates | " + " | ".join(cols) + " | Avg. | wAvg. (inc) | wAvg. (dec) |",
               "|---" * (len(cols) + 4) + "|",
               f"| **{p.mean_label}** | " + " | ".join(_text(p.by_length[L]) for L in p.lengths)
               + " | " + " | ".join(_text(p.averages[k]) for k in ("avg", "wavg_inc", "wavg_dec"))
               + " |", "",
               f"Effective length of the mean over replicates (threshold {p.threshold}): "
               f"{p.effective_label}; per replicate: "
               + ", ".join(f"{run.label} {run.report.summary.effective_label}" for run in p.runs)
               + ".", ""]
    table = ["## Scores per task over replicates", "", "| Task | " + " | ".join(cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    table += [f"| {md_text(t)} | " + " | ".join(_text(p.cells[(t, L)]) for L in p.lengths)
              + " |" for t in p.tasks]
    per_run = ["", "## Per replicate: mean per length", "",
               "| Replicate | Config | " + " | ".join(cols) + " | Avg. |",
               "|---" * (len(cols) + 3) + "|"]
    for run in p.runs:
        s = run.report.summary
        per_run.append(f"| {run.label} | {md_code(run.report.config)} | "
                       + " | ".join("n/a" if s.by_length.get(L) is None
                                    else f"{s.by_length[L]:.2f}" for L in p.lengths)
                       + f" | {'n/a' if s.avg is None else f'{s.avg:.2f}'} |")
    notes = (["", "## Withheld", "", "Cells a run leaves incomplete (so n/a above):", ""]
             + [f"- {md_text(w)}" for w in p.withheld]) if p.withheld else []
    return "\n".join(head + summary + table + per_run + notes) + "\n"


def to_csv(p: PooledReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task", "max_seq_length", "replicates", "mean", "sd", "min", "max",
                *(f"score_{run.label}" for run in p.runs)])
    lines: list[tuple[str, int | str, Spread | None]] = [
        (t, L, p.cells[(t, L)]) for t in p.tasks for L in p.lengths]
    lines += [(p.mean_label, L, p.by_length[L]) for L in p.lengths]
    lines += [(name, "", p.averages[key]) for name, key in
              (("Avg.", "avg"), ("wAvg. (inc)", "wavg_inc"), ("wAvg. (dec)", "wavg_dec"))]
    for name, L, s in lines:
        numbers = (["", "", "", ""] + [""] * len(p.runs) if s is None else
                   [round(s.mean, 4), round(s.sd, 4), round(s.low, 4), round(s.high, 4),
                    *(round(v, 4) for v in s.values)])
        w.writerow([name, L, len(p.runs), *numbers])
    return buf.getvalue()


def to_json(p: PooledReport) -> dict[str, Any]:
    return {
        "model": p.model, "config": p.config, "mode": p.mode,
        "replicates": [{"replicate": run.replicate, "label": run.label,
                        "config": run.report.config, "results": run.where,
                        "dataset": run.report.dataset.to_json(),
                        "effective_length_label": run.report.summary.effective_label}
                       for run in p.runs],
        "spread": SPREAD_TEXT.format(n=len(p.runs)),
        "tasks": p.tasks, "lengths": p.lengths,
        "scores": {t: {str(L): None if (s := p.cells[(t, L)]) is None else s.to_json()
                       for L in p.lengths} for t in p.tasks},
        "mean_label": p.mean_label,
        "mean_by_length": {str(L): None if s is None else s.to_json()
                           for L, s in p.by_length.items()},
        **{k: None if s is None else s.to_json() for k, s in p.averages.items()},
        "threshold": p.threshold, "effective_length_label": p.effective_label,
        "withheld": p.withheld,
    }
