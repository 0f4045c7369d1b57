"""`ruler compare RUN_A RUN_B`: is run A better than run B, row by row?

Both runs are scores.json files (or the results folders holding them), or predictions that
`ruler score` reads, scored here against the dataset given (`--data`), of the same dataset
config and the same split files (content hashes): the same rows, so the comparison is paired
(`ruler.eval.metrics.intervals.paired_difference`). Only rows both runs answered are compared;
the others (skipped, failed, missing in one run) are counted and named, never scored. Per
length, the overall difference pools the shared rows of every task at that length. The two
sides may be scored with different metrics of the same rows (`ruler score --metric`): the
comparison is then what the metric changes, and the report says which side ran which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruler.catalog.benchmarks import get_benchmark, in_task_order, task_rank
from ruler.eval.integrations.inspect_logs import is_inspect_log
from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import (
    PairedDifference,
    method_text,
    paired_difference,
)
from ruler.eval.records.dataset import open_dataset
from ruler.eval.records.results_folder import SCORES_NAME
from ruler.eval.records.scores_record import ScoresRecord, TieTotals
from ruler.eval.report.figures import dodged, error_bars, fit_canvas, new_figure, save_png
from ruler.eval.report.run import (
    benchmark_title,
    check_revision,
    hooks_of,
    load_scores,
    scores_benchmark,
)
from ruler.eval.scoring.score import score_path
from ruler.kernel.atomic import write_json_atomic, write_text_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.markup import figure_text, md_code, md_text

_SHOWN = 5


@dataclass(frozen=True)
class Row:
    """One line of the comparison: a task at a length, or a length overall (task None)."""

    task: str | None
    length: int
    a: float  # mean of A's shared rows, 0..100
    b: float
    diff: PairedDifference

    def to_json(self) -> dict[str, Any]:
        d = self.diff
        return {"task": self.task, "max_seq_length": self.length, "rows": d.rows,
                "a": round(self.a, 2), "b": round(self.b, 2),
                "difference": round(d.difference, 2), "ci95": d.interval.to_json(),
                "interval_method": d.interval.method, "test": d.test,
                "p_value": d.p_value, "significant": d.significant,
                "a_only": d.a_only, "b_only": d.b_only}


@dataclass
class Comparison:
    a: str  # where run A came from
    b: str
    model_a: str | None
    model_b: str | None
    config: str
    rows: list[Row]  # per task x length, then per length overall
    benchmark: str = "ruler"  # the runs' benchmark, as their scores record it (eval.report.run)
    not_shared: dict[str, list[str]] = field(default_factory=dict)  # "a_only"/"b_only" keys
    cells_only: dict[str, list[str]] = field(default_factory=dict)  # cells in one run only
    # "a"/"b" -> scored rows nothing ties to the build, where there are any
    unverified: dict[str, TieTotals] = field(default_factory=dict)
    # "a"/"b" -> the metrics that scored the side's cells, where the two sides differ
    metrics: dict[str, list[str]] = field(default_factory=dict)

    @property
    def method(self) -> str:
        """How the intervals are made, in words, as the runs' benchmark's reports say it."""
        spec = get_benchmark(self.benchmark)
        return method_text(hooks_of(spec).names_weighted_averages(spec))

    @property
    def by_task(self) -> list[Row]:
        return [r for r in self.rows if r.task is not None]

    @property
    def overall(self) -> list[Row]:
        return [r for r in self.rows if r.task is None]

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "model_a": self.model_a, "model_b": self.model_b,
                "config": self.config, "benchmark": self.benchmark, "method": self.method,
                "by_task": [r.to_json() for r in self.by_task],
                "by_length": [r.to_json() for r in self.overall],
                "rows_not_shared": self.not_shared, "cells_in_one_run_only": self.cells_only,
                "unverified": {side: t.to_json() for side, t in self.unverified.items()},
                "metrics": self.metrics}


def _rows_of(scores: ScoresRecord, where: str) -> dict[tuple[str, int], dict[int, float]]:
    cells = {}
    for c in scores.cells:
        if c.row_scores is None:
            raise RulerError(f"{where} records no per-row values (scored by an older ruler): "
                             f"re-score it with `ruler score` to compare it")
        cells[c.key] = {int(i): float(v) for i, v in c.row_scores}
    return cells


def check_same_rows(a: ScoresRecord, b: ScoresRecord, where_a: str, where_b: str) -> None:
    """Refuse runs that were not made on the same rows: another config, or a split file both
    name with other contents."""
    if a.config != b.config:
        raise RulerError(f"{where_a} and {where_b} are runs on different dataset configs "
                         f"({a.config!r} vs {b.config!r}): a paired comparison needs the "
                         f"same rows")
    files_a, files_b = a.files, b.files
    differ = sorted(k for k in set(files_a) & set(files_b) if files_a[k] != files_b[k])
    if differ:
        raise RulerError(f"{where_a} and {where_b} were scored on different builds: "
                         f"{', '.join(differ[:_SHOWN])} differ in content_sha256; compare runs "
                         f"on the same dataset revision")
    if not set(files_a) & set(files_b):
        raise RulerError(f"{where_a} and {where_b} share no (task, length) file: nothing to "
                         f"compare")


def compare_scores(a: ScoresRecord, b: ScoresRecord, where_a: str = "A",
                   where_b: str = "B") -> Comparison:
    check_same_rows(a, b, where_a, where_b)
    config = a.config
    rows_a, rows_b = _rows_of(a, where_a), _rows_of(b, where_b)
    cells = sorted(set(rows_a) & set(rows_b), key=lambda k: (k[1], task_rank(k[0])))
    only: dict[str, list[str]] = {"a_only": [], "b_only": []}
    lines: list[Row] = []
    pooled: dict[int, tuple[list[float], list[float]]] = {}
    for task, L in cells:
        ra, rb = rows_a[(task, L)], rows_b[(task, L)]
        shared = sorted(set(ra) & set(rb))
        only["a_only"] += [f"{config}/{task}/{L}/{i}" for i in sorted(set(ra) - set(rb))]
        only["b_only"] += [f"{config}/{task}/{L}/{i}" for i in sorted(set(rb) - set(ra))]
        if not shared:
            continue
        xa, xb = [ra[i] for i in shared], [rb[i] for i in shared]
        lines.append(_row(task, L, xa, xb, f"{config}/{task}/{L}"))
        pa, pb = pooled.setdefault(L, ([], []))
        pa += xa
        pb += xb
    lines += [_row(None, L, xa, xb, f"{config}/overall/{L}")
              for L, (xa, xb) in sorted(pooled.items())]
    in_one = {"a_only": [f"{t}/{L}" for t, L in sorted(set(rows_a) - set(rows_b))],
              "b_only": [f"{t}/{L}" for t, L in sorted(set(rows_b) - set(rows_a))]}
    if not lines:
        raise RulerError(f"{where_a} and {where_b} have no answered row in common: nothing "
                         f"to compare")
    unverified = {side: totals for side, run in (("a", a), ("b", b))
                  if (totals := run.tied_to_build).unverified}
    metrics = {side: sorted({c.metric for c in run.cells}) for side, run in (("a", a), ("b", b))}
    return Comparison(where_a, where_b, a.model, b.model, config, lines,
                      scores_benchmark(a), only, in_one, unverified,
                      metrics if metrics["a"] != metrics["b"] else {})


def _row(task: str | None, L: int, xa: list[float], xb: list[float], key: str) -> Row:
    return Row(task, L, sum(xa) / len(xa) * 100, sum(xb) / len(xb) * 100,
               paired_difference(xa, xb, key=key))


def compare_runs(run_a: str | Path, run_b: str | Path, data: str | None = None,
                 revision: str | None = None, config: str | None = None) -> Comparison:
    """Compare two runs, each a results folder, a scores.json, or predictions that `ruler
    score` reads (scored here against `data`, a build folder or Hub id at `revision`, its
    config `config` or the one the predictions name). With `data`, scores are checked to be
    of its rows."""
    return compare_scores(run_scores(run_a, data, revision, config),
                          run_scores(run_b, data, revision, config), str(run_a), str(run_b))


def holds_scores(run: str | Path) -> bool:
    """Whether `run` names scores (a folder with scores.json, or a JSON file that is not an
    Inspect log), rather than predictions."""
    run = Path(run)
    if run.is_dir():
        return (run / SCORES_NAME).is_file()
    return run.suffix == ".json" and not (run.is_file() and is_inspect_log(run))


def run_scores(run: str | Path, data: str | None = None, revision: str | None = None,
               config: str | None = None) -> ScoresRecord:
    """The scores of one side of a comparison (see `compare_runs`)."""
    if holds_scores(run):
        scores = load_scores(run)
        if data is not None:
            ds = open_dataset(data, revision, scores.config)
            check_revision(scores, {f.key: f.content_sha256 for f in ds.files(scores.config)},
                           str(run))
        return scores
    if not Path(run).exists():
        raise RulerError(f"{run} not found: name a results folder, its scores.json, or a "
                         f"predictions file (with --data)")
    if data is None:
        raise RulerError(f"{run} holds predictions, not scores (no {SCORES_NAME}): pass --data "
                         f"(the dataset they were made from) to score them here, or score them "
                         f"first with `ruler score`")
    return score_path(run, data, revision, config)


def _p(p: float) -> str:
    return f"{p:.3g}" if p >= 0.001 else "< 0.001"


def to_markdown(c: Comparison) -> str:
    head = [f"# {md_text(benchmark_title(c.benchmark))} comparison: A - B", "",
            f"A: {md_code(c.a)} ({md_text(c.model_a or 'unknown model')}); B: {md_code(c.b)} "
            f"({md_text(c.model_b or 'unknown model')}); tokenizer config {md_code(c.config)}. "
            f"Differences in points (0..100) over the rows both runs answered; * significant "
            f"at 5 %.", ""]
    if c.metrics:
        head += [f"Scored with different metrics: A {', '.join(map(md_text, c.metrics['a']))}; "
                 f"B {', '.join(map(md_text, c.metrics['b']))} (the differences are the "
                 f"metrics' where the answers are the same).", ""]
    table = ["| Task | Length | Rows | A | B | A - B | 95 % interval | Test | p |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in c.by_task + c.overall:
        d = r.diff
        name = md_text(r.task) if r.task else "**all tasks**"
        test = d.test + (f" ({d.a_only}/{d.b_only})" if d.test == "mcnemar" else "")
        table.append(f"| {name} | {format_length(r.length)} | {d.rows} | {r.a:.2f} | "
                     f"{r.b:.2f} | {d.difference:+.2f}{'*' if d.significant else ''} | "
                     f"[{d.interval.low:.1f}, {d.interval.high:.1f}] | {test} | "
                     f"{_p(d.p_value)} |")
    notes = ["", "McNemar (a/b): rows right in A only / in B only. "
                 f"Uncertainty: {c.method}"]
    for side, name in (("a", "A"), ("b", "B")):
        keys = c.not_shared.get(f"{side}_only") or []
        if keys:
            notes.append(f"\nRows answered in {name} only (not compared): {len(keys)}: "
                         + ", ".join(map(md_text, keys[:_SHOWN]))
                         + (" ..." if len(keys) > _SHOWN else ""))
        cells = c.cells_only.get(f"{side}_only") or []
        if cells:
            notes.append(f"\nCells scored in {name} only (not compared): "
                         f"{', '.join(map(md_text, cells))}")
        tie = c.unverified.get(side)
        if tie:
            notes.append(f"\nUnverified rows in {name}: {tie.unverified} of {tie.scored} "
                         f"scored rows carry nothing that ties them to the build they were "
                         f"scored on (no data_sha256 or prompt in the predictions)")
    return "\n".join(head + table + notes) + "\n"


def figure(c: Comparison) -> Any:
    """A - B per length with its interval (black), and each task's difference, the tasks
    spread across a length's slot so that equal differences stay visible."""
    fig, ax = new_figure((7, 4.5))
    overall = c.overall
    slot = {r.length: n for n, r in enumerate(overall)}
    ys = [r.diff.difference for r in overall]
    err = error_bars(ys, [r.diff.interval for r in overall])
    tasks = in_task_order({r.task for r in c.by_task if r.task is not None})
    # an even number of places: none at the slot's centre, where the overall point sits
    places = len(tasks) + len(tasks) % 2
    for n, task in enumerate(tasks):
        mine = {r.length: r.diff.difference for r in c.by_task if r.task == task}
        ax.plot(dodged(range(len(overall)), n, places),
                [mine.get(r.length, float("nan")) for r in overall], marker=".", alpha=0.35,
                linewidth=0.8, label=figure_text(task))
    ax.errorbar(list(slot.values()), ys, yerr=err, marker="o", capsize=5, color="black",
                linewidth=2, label="all tasks (95 % interval)")
    ax.axhline(0, color="gray", linestyle="--")
    ax.set_xticks(list(slot.values()), [format_length(L) for L in slot])
    ax.set(xlabel="context length", ylabel="A - B (points)",
           title=f"{figure_text(benchmark_title(c.benchmark))} A - B: "
                 f"{figure_text(c.model_a or 'A')} vs {figure_text(c.model_b or 'B')}")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fit_canvas(fig)
    return fig


def plot(c: Comparison, path: Path) -> Path:
    """`figure(c)` as a PNG at `path`."""
    return save_png(figure(c), path, dpi=110)


def write_comparison(c: Comparison, out: Path, plots: bool = True) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "compare.md", to_markdown(c))
    write_json_atomic(out / "compare.json", c.to_json())
    if plots:
        plot(c, out / "compare.png")
