"""A run beside a published result: `ruler report RUN --reference NAME`, and
`ruler compare RUN reference:NAME`.

Per length: the published score, the run's score with its 95 % interval, the difference (run -
published), and where the published value lies relative to the interval (inside it: the run
agrees with it at this sample size; above or below it: the gap is more than the run's sampling
noise, so look at the set-up, or the model). The effective lengths side by side, Avg. and wAvg.
where both sides have them, and per task where the source gives task scores.

The published number is an estimate too (from its own samples), and a comparison is only as
good as the set-ups are alike: every difference the two records show (another model, samples
per task, prompt mode, lengths or tasks one side has and the other lacks, numbers reported by a
model's authors rather than RULER's maintainers, a partial run) is listed, never passed over. A
length mean over fewer tasks than the published 13 is not compared at all.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval
from ruler.eval.published_results import (
    PublishedResult,
    benchmark_name,
    benchmark_tasks,
    load_registry,
)
from ruler.eval.report.figures import error_bars, fit_canvas, new_figure, save_png
from ruler.eval.report.intervals import cell_interval, format_interval
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import figure_text, md_code, md_text

#: A report of one run (`ruler.eval.report.run.Report`, which imports this module: named by its
#: role here, so the two modules import one way only).
Report = Any


@dataclass(frozen=True)
class Line:
    """One number on both sides: a length's mean (task None) or a task's score at a length."""

    task: str | None
    length: int
    published: float | None
    run: float | None
    interval: Interval | None
    derived: bool = False  # the published value is the mean of the source's task scores
    why_no_run: str = ""  # why the run's side is empty

    @property
    def difference(self) -> float | None:
        return None if self.run is None or self.published is None else self.run - self.published

    @property
    def position(self) -> str | None:
        """Where the published value lies relative to the run's interval: "inside", "above"
        (the run scores lower than published beyond its noise) or "below"; None without both."""
        if self.published is None or self.interval is None:
            return None
        if self.interval.contains(self.published):
            return "inside"
        return "above" if self.published > self.interval.high else "below"

    def to_json(self) -> dict[str, Any]:
        d = self.difference
        return {"task": self.task, "max_seq_length": self.length, "published": self.published,
                "published_derived": self.derived, "run": _round(self.run),
                "ci95": self.interval.to_json() if self.interval else None,
                "difference": _round(d), "published_position": self.position,
                "run_missing_because": self.why_no_run or None}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


@dataclass
class ReferenceComparison:
    entry: PublishedResult
    run_model: str | None
    by_length: list[Line]
    by_task: list[Line]
    averages: dict[str, tuple[float | None, float | None, Interval | None]]
    run_effective: str
    published_effective: str | None
    differences: list[str] = field(default_factory=list)  # set-up differences, in words

    @property
    def positions(self) -> Counter[str]:
        return Counter(line.position for line in self.by_length if line.position)

    def summary_line(self) -> str:
        """For the terminal: the per-length positions in one line."""
        parts = [f"{format_length(x.length)} {x.position}" for x in self.by_length
                 if x.position]
        shown = "; ".join(parts) if parts else "no length compared"
        return (f"published {self.entry.name}: the published score lies {shown} (of the run's "
                f"95 % interval); effective length run {self.run_effective}, published "
                f"{self.published_effective or 'not given'}; {len(self.differences)} set-up "
                f"difference(s) listed in the report")

    def to_json(self) -> dict[str, Any]:
        return {"published": self.entry.to_json(), "source": self.entry.source.cite(),
                "run_model": self.run_model,
                "by_length": [x.to_json() for x in self.by_length],
                "by_task": [x.to_json() for x in self.by_task],
                "averages": {k: {"published": p, "run": _round(v),
                                 "ci95": i.to_json() if i else None,
                                 "published_inside": None if i is None or p is None
                                 else i.contains(p)}
                             for k, (p, v, i) in self.averages.items()},
                "effective_length": {"run": self.run_effective,
                                     "published": self.published_effective},
                "setup_differences": self.differences}


def _run_rows(r: Report) -> list[int]:
    return sorted({c.rows for c in r.cells.values()})


def setup_differences(r: Report, e: PublishedResult) -> list[str]:
    """What differs between how the published numbers and the run were made, in words."""
    out = []
    if not e.matches_model(r.model):
        ids = ", ".join(e.model_ids) or "no model id given"
        out.append(f"Model: the run's model is {r.model or 'not recorded'}; the published "
                   f"result is of {e.model} ({ids}). This compares two models.")
    rows = _run_rows(r)
    shown = "/".join(map(str, rows)) or "no"
    if e.samples_per_task is None:
        out.append(f"Samples: the source does not say how many samples per task and length it "
                   f"used; this run has {shown}.")
    elif rows != [e.samples_per_task]:
        out.append(f"Samples: published from {e.samples_per_task} samples per task and length, "
                   f"this run from {shown}: the run's intervals are for its own sample size, "
                   f"and the published value is itself an estimate from its samples (a "
                   f"difference inside the interval is within the run's noise).")
    if e.mode and r.mode and e.mode != r.mode:
        out.append(f"Prompt mode: published in {e.mode} mode, this run in {r.mode} mode "
                   f"(chat template or not, where the answer prefix sits): not the same "
                   f"prompts.")
    elif e.mode and not r.mode:
        out.append(f"Prompt mode: published in {e.mode} mode; the run's mode is not recorded "
                   f"(predictions from another framework).")
    lengths = e.lengths
    missing = [L for L in lengths if L not in r.lengths]
    extra = [L for L in r.lengths if L not in lengths]
    if missing:
        out.append("Lengths: published at " + ", ".join(map(format_length, missing))
                   + ", which the run did not run: no comparison there, and the run's "
                     "effective length cannot exceed its longest length "
                   + f"({format_length(max(r.lengths))}).")
    if extra:
        out.append("Lengths: the run has " + ", ".join(map(format_length, extra))
                   + ", which the source does not give.")
    own = benchmark_tasks(e.benchmark)
    if set(r.tasks) != set(own):
        out.append(f"Tasks: the run has {len(r.tasks)} of {benchmark_name(e.benchmark)}'s "
                   f"{len(own)} tasks; the published per-length score is the mean of all "
                   f"{len(own)}, so no length mean is compared"
                   + (" (per-task scores are)." if e.tasks else "."))
    if not r.complete:
        out.append("Coverage: the run is partial (rows missing or failed): lengths with an "
                   "incomplete cell, Avg., wAvg. and the effective length are not compared.")
    if e.reported_by and "maintainers" not in e.reported_by:
        out.append(f"Source: {e.reported_by}; their set-up may differ from RULER's own "
                   f"(template: {e.template or 'not stated'}).")
    if any(e.score(L)[1] for L in lengths):
        out.append("Derived: where the source gives only per-task scores, the published "
                   "per-length value is their plain mean over the tasks (as RULER averages).")
    if e.notes:
        out.append(f"Note: {e.notes}")
    return out


def compare_report(r: Report, e: PublishedResult) -> ReferenceComparison:
    """The run's report beside one published result."""
    if r.benchmark != e.benchmark:
        raise RulerError(f"{e.name} is a {benchmark_name(e.benchmark)} result and the run is "
                         f"on {benchmark_name(r.benchmark)} tasks: nothing to compare")
    own = benchmark_tasks(e.benchmark)
    all_tasks = set(r.tasks) == set(own)
    ri = r.intervals
    by_length = []
    for L in sorted(set(e.lengths) | set(r.lengths)):
        published, derived = e.score(L)
        run, why = r.summary.by_length.get(L), ""
        if L not in r.lengths:
            why = "not run"
        elif not all_tasks:
            run, why = None, f"mean over {len(r.tasks)} of {len(own)} tasks: not comparable"
        elif run is None:
            why = "incomplete: rows missing, failed or skipped"
        interval = ri.by_length.get(L) if ri and run is not None else None
        by_length.append(Line(None, L, published, run, interval, derived, why))
    by_task = []
    for task in [t for t in own if t in e.tasks]:
        for L in sorted(L for L, v in e.tasks[task].items() if v is not None):
            cell = r.cells.get((task, L))
            run = cell.score if cell else None
            by_task.append(Line(task, L, e.tasks[task][L], run,
                                cell_interval(cell) if cell and run is not None else None,
                                why_no_run="" if run is not None else
                                "not run" if cell is None else "no answered row"))
    same_lengths = sorted(r.lengths) == sorted(e.scores) and all_tasks
    averages = {}
    for key in ("avg", "wavg_inc", "wavg_dec"):
        run_value = getattr(r.summary, key) if same_lengths else None
        interval = getattr(ri, key) if ri and run_value is not None else None
        averages[key] = (getattr(e, key), run_value, interval)
    # A source that gives no effective length gets none computed on its behalf.
    return ReferenceComparison(e, r.model, by_length, by_task, averages,
                               r.summary.effective_label, e.effective_length,
                               setup_differences(r, e))


def comparisons(r: Report, names: Sequence[str],
                files: Sequence[str | Path] = ()) -> list[ReferenceComparison]:
    """The run beside each published result named (`--reference`, `--reference-file`)."""
    if not names:
        return []
    registry = load_registry(files)
    if not any(e.benchmark == r.benchmark for e in registry.entries.values()):
        held = sorted({benchmark_name(e.benchmark) for e in registry.entries.values()})
        raise RulerError(f"no published results for {benchmark_name(r.benchmark)} in the "
                         f"registry (it holds {' and '.join(held) or 'no'} results only): there "
                         f"is nothing to compare this run with; add your own with "
                         f"--reference-file")
    return [compare_report(r, registry.find(n)) for n in names]


def hint(r: Report, files: Sequence[str | Path] = ()) -> list[str]:
    """Names of published results for the run's model (a suggestion to compare with them)."""
    try:
        return [e.name for e in load_registry(files).for_model(r.model, r.benchmark)]
    except RulerError:
        return []


# --- output ---------------------------------------------------------------------------------

def _v(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


_POSITION_TEXT = {"inside": "inside", "above": "**above** (run lower)",
                  "below": "**below** (run higher)"}


def _line_cells(x: Line) -> list[str]:
    run = _v(x.run, 2) if x.run is not None else f"n/a ({x.why_no_run})" if x.why_no_run else "—"
    d = x.difference
    return [_v(x.published) + (" †" if x.derived else ""), run,
            format_interval(x.interval) or "—", "—" if d is None else f"{d:+.2f}",
            _POSITION_TEXT.get(x.position or "", "—")]


def markdown(c: ReferenceComparison, heading: str = "##") -> list[str]:
    e = c.entry
    lines = [f"{heading} Beside the published result {md_code(e.name)}", "",
             f"**{md_text(e.model)}**, from {md_text(e.source.cite())}. Reported by "
             f"{md_text(e.reported_by or 'not stated')}; mode {md_text(e.mode or 'not stated')}"
             f"; samples per task and length {e.samples_per_task or 'not stated'}; decoding "
             f"{md_text(e.decoding or 'not stated')}. Averaged: "
             f"{md_text(e.averaged or 'not stated')}.", "",
             "| Length | Published | Run | Run 95 % interval | Run - published | "
             "Published value vs the interval |", "|---|---|---|---|---|---|"]
    for x in c.by_length:
        lines.append(f"| {format_length(x.length)} | " + " | ".join(_line_cells(x)) + " |")
    names = {"avg": "Avg.", "wavg_inc": "wAvg. (inc)", "wavg_dec": "wAvg. (dec)"}
    for key, (p, v, i) in c.averages.items():
        if p is not None or v is not None:  # an average is a Line of no length
            lines.append(f"| {names[key]} | "
                         + " | ".join(_line_cells(Line(None, 0, p, v, i))) + " |")
    lines.append(f"| Effective length | {md_text(c.published_effective or 'not given')} | "
                 f"{c.run_effective} | | | |")
    lines += ["", "*inside*: the published value lies in the run's 95 % interval, so the two "
                  "agree at the run's sample size; *above* / *below*: the gap is larger than "
                  "the run's sampling noise: see the set-up differences and the health "
                  "section." + (" † the mean of the source's 13 task scores."
                                if any(x.derived for x in c.by_length) else ""), ""]
    if c.by_task:
        lines += ["| Task | Length | Published | Run | Run 95 % interval | Run - published | "
                  "Published value vs the interval |", "|---|---|---|---|---|---|---|"]
        for x in c.by_task:
            lines.append(f"| {md_text(x.task)} | {format_length(x.length)} | "
                         + " | ".join(_line_cells(x)) + " |")
        lines.append("")
    if c.differences:
        lines += ["Set-up differences (the comparison holds only as far as these allow):", ""]
        lines += [f"- {md_text(d)}" for d in c.differences] + [""]
    else:
        lines += ["No set-up difference recorded between the run and the published result.",
                  ""]
    return lines


def hint_markdown(names: Sequence[str]) -> list[str]:
    if not names:
        return []
    command = md_code(f"ruler report RESULTS --reference {names[0]}")
    return [f"Published results exist for this model: {', '.join(map(md_code, names))}. "
            f"Put them beside this run with {command}.", ""]


def to_csv(cs: Sequence[ReferenceComparison]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["reference", "task", "max_seq_length", "published", "published_derived", "run",
                "ci_low", "ci_high", "difference", "published_position"])
    for c in cs:
        for x in c.by_length + c.by_task:
            w.writerow([c.entry.name, x.task or "mean", x.length,
                        "" if x.published is None else x.published, int(x.derived),
                        "" if x.run is None else round(x.run, 4),
                        *(x.interval.to_json() if x.interval else ["", ""]),
                        "" if x.difference is None else round(x.difference, 4),
                        x.position or ""])
    return buf.getvalue()


def mark_plot(ax: Any, cs: Sequence[ReferenceComparison], xs: Sequence[Any],
              lengths: Sequence[int], task: str | None = None, color: Any = None) -> None:
    """Published values as markers on a score-by-length axis where length `lengths[i]` is
    drawn at `xs[i]` (a label or a position): per length (task None) or one task's."""
    for n, c in enumerate(cs):
        lines = c.by_length if task is None else [x for x in c.by_task if x.task == task]
        points = [(xs[lengths.index(x.length)], x.published) for x in lines
                  if x.published is not None and x.length in lengths]
        if not points:
            continue
        at, ys = zip(*points)
        ax.plot(at, ys, linestyle="none", marker="*x+"[n % 3], markersize=11 if task is None
                else 8, color=color or "crimson",
                label=f"published: {figure_text(c.entry.model)}" if task is None else None)


def figure(c: ReferenceComparison) -> Any:
    """`ruler compare RUN reference:NAME`'s figure: the run's mean per length with its
    interval, the published values as markers (at every length either side has)."""
    lengths = [x.length for x in c.by_length]
    at = list(range(len(lengths)))
    ys = [float("nan") if x.run is None else x.run for x in c.by_length]
    err = error_bars([x.run for x in c.by_length], [x.interval for x in c.by_length])
    fig, ax = new_figure((7, 4.5))
    ax.errorbar(at, ys, yerr=err, marker="o", capsize=4,
                label=f"run: {figure_text(c.run_model or 'unknown model')} (95 % interval)")
    mark_plot(ax, [c], at, lengths)
    ax.set_xticks(at, [format_length(L) for L in lengths])
    name = benchmark_name(c.entry.benchmark)
    ax.set(xlabel="context length", ylabel="score", ylim=(-2, 102),
           title=f"{figure_text(name)}: run vs published {figure_text(c.entry.name)}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fit_canvas(fig)
    return fig


def plot(c: ReferenceComparison, path: Path) -> Path:
    """`figure(c)` as a PNG at `path`."""
    return save_png(figure(c), path, dpi=110)
