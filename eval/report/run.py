"""`ruler report`: a results folder's scores as the paper's Table 3 (Markdown, CSV, JSON, PNG).

Input is the `scores.json` that `ruler eval` / `ruler score` wrote. Coverage (a partial result
withholds the effective length, Avg. and wAvg.; docs/scoring.md) and the intervals
(eval.report.intervals; docs/reports-and-statistics.md) are shown beside every number, so an
incomplete or uncertain cell is visible instead of looking like a score. Cells a results
folder's run asked for (run.json) that its scores.json has not scored yet, as after an
interrupted `ruler eval`, count as incomplete too.

The benchmark is the one scores.json records; its record says how its scores aggregate
(`Benchmark.aggregation`), and its report hooks (`Benchmark.report`, a `ReportHooks`) add its
own sections, figures and fields. Scores of an older ruler, which did not record the
benchmark, take it from the manifest they were scored on, else from the one benchmark that
lists all of their tasks (`legacy_benchmark`); scores whose tasks no or several benchmarks
list are refused.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ruler.benchmarks import DEFAULT
from ruler.builder.manifest import BuildEntry
from ruler.catalog.benchmarks import (
    BENCHMARK_SPECS,
    Benchmark,
    get_benchmark,
    in_task_order,
    task_rank,
    tasks_of,
)
from ruler.eval.metrics.aggregate import DEFAULT_THRESHOLD, Summary, format_length, summarize
from ruler.eval.metrics.depth import (
    DEFAULT_DEPTH_BINS,
    DEFAULT_MIN_SAMPLES,
    DepthTables,
    depth_table,
)
from ruler.eval.metrics.health import flags as health_flags
from ruler.eval.metrics.health import markdown as health_markdown
from ruler.eval.metrics.intervals import Interval, method_text
from ruler.eval.records.health_record import HealthFacts
from ruler.eval.records.results_folder import PREDICTIONS_NAME, RUN_NAME, SCORES_NAME
from ruler.eval.records.results_schema import read_run, read_scores
from ruler.eval.records.run_record import DatasetRecord, PromptCheck, ServingRecord
from ruler.eval.records.scores_record import CellScore, ScoresRecord, Selection, TieTotals, cell_of
from ruler.eval.records.serving import markdown as serving_markdown
from ruler.eval.report.depth import depth_csv, depth_markdown, write_heatmaps
from ruler.eval.report.figures import dodged, error_bars, fit_canvas, new_figure, save_png
from ruler.eval.report.intervals import ReportIntervals, format_interval, report_intervals
from ruler.eval.report.reference import ReferenceComparison, comparisons, hint, hint_markdown
from ruler.eval.report.reference import mark_plot as mark_published
from ruler.eval.report.reference import markdown as reference_markdown
from ruler.eval.report.reference import to_csv as reference_csv
from ruler.kernel.atomic import write_json_atomic, write_text_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.json_record import encode, fields_json
from ruler.kernel.markup import figure_text, md_code, md_text


@dataclass(kw_only=True)
class Report:
    model: str | None
    config: str
    dataset: DatasetRecord
    tasks: list[str]
    lengths: list[int]
    cells: dict[tuple[str, int], CellScore]
    summary: Summary
    depth: DepthTables | None = None  # None: scores.json has no depth items (older scores)
    mode: str | None = None  # "reasoning": the report counts rows that ran out of budget
    # Cells asked for with a row missing or failed, or not scored at all (`unscored`),
    # shortest length first.
    incomplete: list[tuple[str, int]] = field(default_factory=list)
    unscored: set[tuple[str, int]] = field(default_factory=set)
    # scores.json's (what was asked; None: not recorded)
    selection: Selection | None = None
    intervals: ReportIntervals | None = None  # None: the scores record no rows (older ones)
    # How the prompts were served and the server's prompt-count check (eval.records.serving)
    serving: list[ServingRecord] | None = None
    prompt_check: PromptCheck | None = None
    # How the scored rows are tied to the build (scores_record.TieTotals); None: not recorded
    # (older scores.json)
    tied_to_build: TieTotals | None = None
    # The set-up health facts scores.json recorded (None: older scores) and the run beside
    # published results (`--reference`), or the names of those for its model (a hint).
    health: HealthFacts | None = None
    references: list[ReferenceComparison] = field(default_factory=list)
    reference_hint: list[str] = field(default_factory=list)
    # The same model's scores without the context ("task", L) -> score (`--no-context`).
    baseline: dict[tuple[str, int], float | None] | None = None
    benchmark: str = DEFAULT  # the id scores.json records (catalog.benchmarks)
    # The config's axis values as the scores record them ({"language": "en-ko"};
    # `recorded_axes`); {}: a benchmark without axes, or not recorded
    axes: dict[str, str] = field(default_factory=dict)
    # Why rows fail, as the benchmark's report hooks read the cells' labels; None: no cell
    # labelled (older scores, or a benchmark without failure labels)
    failures: Any = None
    # The suites built into the scored config (`catalog.suites`, `recorded_suites`), whose
    # panels the benchmark's hooks draw; and whether the report's figures are drawn
    # (`write_report(plots=)`: report.md links them only then)
    suites: list[str] = field(default_factory=list)
    plots: bool = True

    @property
    def mean_label(self) -> str:
        n = len(self.tasks)
        return f"Mean ({n} task{'s' * (n != 1)})"

    @property
    def spec(self) -> Benchmark:
        return get_benchmark(self.benchmark)

    @property
    def hooks(self) -> ReportHooks:
        """The benchmark's additions to the report (`Benchmark.report`)."""
        return hooks_of(self.spec)

    @property
    def title(self) -> str:
        """The benchmark's name in the report (its `Benchmark.title`)."""
        return self.spec.title

    @property
    def complete(self) -> bool:
        return not self.incomplete

    def coverage(self, task: str, L: int) -> str | None:
        """"done/asked" of a cell asked for ("not scored" when it has no cell; None: the
        cell was not asked for)."""
        if (task, L) in self.unscored:
            return "not scored"
        c = self.cells.get((task, L))
        return None if c is None else f"{c.done}/{c.rows}"

    @property
    def rows_done(self) -> tuple[int, int]:
        """Rows with a result and rows asked for, over the cells scored."""
        return (sum(c.done for c in self.cells.values()),
                sum(c.rows for c in self.cells.values()))

    def incomplete_labels(self) -> list[str]:
        return [f"{t} @ {format_length(L)} ({self.coverage(t, L)})" for t, L in self.incomplete]

    def selection_text(self) -> str:
        """What was asked for, e.g. "2 task(s) x 1 length(s), as the run asked, first 2 rows
        of each"."""
        selection = self.selection or Selection()
        by = {"run": ", as the run asked", "flags": ", as --tasks/--lengths select",
              "config": ", all of the config's"}.get(selection.by or "", "")
        limit = selection.limit
        return (f"{len(self.tasks)} task(s) x {len(self.lengths)} length(s){by}"
                + (f", first {limit} rows of each" if limit else ""))

    @property
    def unverified(self) -> int:
        return self.tied_to_build.unverified if self.tied_to_build else 0

    def unverified_text(self) -> str:
        """The scored rows nothing ties to this build, in words ("" when there are none)."""
        if not self.unverified:
            return ""
        tie = self.tied_to_build
        assert tie is not None  # unverified rows are counted in it
        weak = (f"; {tie.length_only} carry only a length equal to the row's, which "
                f"another build's row can share" if tie.length_only else "")
        return (f"{self.unverified} of {tie.scored} scored rows carry nothing that ties "
                f"them to this build (no data_sha256 or prompt in the predictions{weak}): "
                f"predictions made from another build of config {self.config!r} (another seed "
                f"or revision) would score as wrong answers")

    def skipped_lengths(self) -> dict[int, tuple[int, int]]:
        """Per length with rows skipped (too long for the model): (rows scored, rows with a
        result) over its cells: its numbers rest on fewer rows than were asked for."""
        marked = {L for (_, L), c in self.cells.items() if c.skipped}
        return {L: (sum(c.scored for (_, at), c in self.cells.items() if at == L),
                    sum(c.done for (_, at), c in self.cells.items() if at == L))
                for L in sorted(marked)}

    def scored_text(self) -> str:
        """"5 scored, 1 skipped as too long for the model" where rows were skipped; "" when
        every row with a result was scored."""
        skipped = sum(c.skipped for c in self.cells.values())
        scored = sum(c.scored for c in self.cells.values())  # the rows the scores rest on
        return (f"{scored} scored, {skipped} skipped as too long for the model "
                f"(marked *; the report's notes say why)") if skipped else ""

    def status_line(self) -> str:
        """One line on what the numbers cover, for the terminal."""
        done, asked = self.rows_done
        scope = f"{done} of {asked} rows asked for have a result" + (
            " in the cells scored" if self.unscored else "")
        scored = self.scored_text()
        unverified = f"; UNVERIFIED: {self.unverified_text()}" if self.unverified else ""
        if self.complete:
            return (f"complete: {scope}{': ' + scored if scored else ''} "
                    f"({self.selection_text()}){unverified}")
        return (f"PARTIAL: {scope}; incomplete cells: {', '.join(self.incomplete_labels())}; "
                + (f"{scored}; " if scored else "")
                + f"effective length, Avg. and wAvg. withheld. Complete the predictions "
                f"(re-running `ruler eval` resumes), or score only what was run "
                f"(`ruler score --tasks/--lengths/--limit`){unverified}")


# --- what a benchmark adds: its hooks ----------------------------------------------------------

class ReportHooks:
    """What a benchmark adds to `ruler report` (`Benchmark.report`, the address of one in its
    folder): its own sections, figures and fields, and its table of several runs. The frame
    here writes what every benchmark's report has; every hook does nothing by default, so a
    benchmark overrides only what it has."""

    def prepare(self, r: Report, scores: ScoresRecord) -> None:
        """Read what the hooks need of the scores into the report (`Report.extra`)."""

    def head(self, r: Report) -> list[str]:
        """Lines of the report's head, after what it covers (the run's facts: its language)."""
        return []

    def after_tasks(self, r: Report) -> list[str]:
        """Lines under the table of scores per task (a family x difficulty table)."""
        return []

    def sections(self, r: Report) -> list[str]:
        """Sections after the table of scores per task, in the full report (report.md)."""
        return []

    def tail(self, r: Report) -> list[str]:
        """Sections at the report's end (why rows fail)."""
        return []

    def depth_note(self, r: Report) -> str:
        """How the score-by-depth section counts the gold items of the benchmark's tasks."""
        return "Each row's gold items count at the depths its build recorded, with its score."

    def depth_group_rule(self, r: Report) -> bool:
        """Whether the score-by-depth section says how its group table's cells are marked:
        where the report has that table."""
        return r.depth is not None and bool(r.depth.niah)

    def names_weighted_averages(self, spec: Benchmark) -> bool:
        """Whether the uncertainty sentence names the weighted averages among the means its
        bootstrap covers: where the benchmark has them (`Aggregation.weighted`)."""
        return spec.aggregation.weighted

    def json(self, r: Report) -> dict[str, Any]:
        """Fields report.json adds for the benchmark."""
        return {}

    def figures(self, r: Report, out: Path) -> None:
        """Write the benchmark's own figures into `out`."""

    def with_no_context(self, r: Report, scores: ScoresRecord, baseline: ScoresRecord,
                        where: str) -> None:
        """Take in the same model's run on the config's no-context variant (`--no-context`)."""

    def several(self, cfg: Any, runs: Sequence[tuple[str, Report]]) -> int | None:
        """`ruler report RUN RUN ...` of this benchmark's runs (name, report): the benchmark's
        own table of several runs, its exit status; None: the frame's (Table 3, replicates
        pooled)."""
        return None

    def reports_several(self) -> bool:
        """Whether the benchmark has its own table of several runs (overrides `several`)."""
        return type(self).several is not ReportHooks.several


#: The hooks of a benchmark that adds nothing.
NO_HOOKS = ReportHooks()


def hooks_of(spec: Benchmark) -> ReportHooks:
    """A benchmark's additions to the report (`Benchmark.report`), or none."""
    return spec.hook("report") or NO_HOOKS


def load_scores(results: str | Path) -> ScoresRecord:
    path = Path(results)
    path = path / SCORES_NAME if path.is_dir() else path
    if not path.is_file():
        raise RulerError(f"{path} not found: run `ruler eval` or `ruler score` first")
    return read_scores(path)


def check_revision(scores: ScoresRecord, dataset_files: Mapping[str, str], where: str) -> None:
    """Refuse scores made from other rows than the given dataset's (content hashes differ)."""
    changed = sorted(k for k, sha in scores.files.items()
                     if k in dataset_files and dataset_files[k] != sha)
    absent = sorted(k for k in scores.files if k not in dataset_files)
    if changed or absent:
        raise RulerError(f"{where} was scored on a different revision of the dataset: "
                         f"{', '.join((changed + absent)[:5])} differ(s) or are absent")


def build_report(scores: ScoresRecord, threshold: float = DEFAULT_THRESHOLD,
                 depth_bins: int | None = None,
                 min_depth_samples: int = DEFAULT_MIN_SAMPLES,
                 asked: Iterable[str] = ()) -> Report:
    """The report of a scores.json. Depth bins: `depth_bins`, else the depth-swept dataset
    config's own, else DEFAULT_DEPTH_BINS. `asked`: "task/L" cells asked for besides the
    scores' own files (a results folder's run), unscored ones making the results partial."""
    cells = {c.key: c for c in scores.cells}
    unscored = {cell_of(k) for k in (*scores.files, *asked)} - set(cells)
    if not cells and not unscored:
        raise RulerError("the scores hold no (task, length) cell")
    tasks = in_task_order(t for t, _ in (*cells, *unscored))
    lengths = sorted({L for _, L in (*cells, *unscored)})
    spec = get_benchmark(scores_benchmark(scores, tasks), scores.benchmark_package)
    listed = {t for b in BENCHMARK_SPECS.values() for t in b.tasks}
    other = [t for t in tasks if t not in tasks_of(spec.id) and t in listed]
    if other:  # a mean over two benchmarks' tasks would be neither's score
        raise RulerError(f"the scores are of benchmark {spec.id!r} but hold task(s) "
                         f"{', '.join(other[:3])}, not its own: they mix the tasks of several "
                         f"benchmarks; score and report each benchmark's config on its own")
    incomplete = sorted([k for k, c in cells.items() if not c.complete] + list(unscored),
                        key=lambda k: (k[1], task_rank(k[0])))
    by_length: dict[int, float | None] = {}
    for L in lengths:
        values = [cells[(t, L)].score if (t, L) in cells else None for t in tasks]
        # A length misses a task or a score: its mean would be over other tasks than the rest;
        # a length with rows missing would be a mean over other rows than were asked for.
        gap = any(v is None for v in values) or any(k[1] == L for k in incomplete)
        by_length[L] = None if gap else spec.aggregation.per_length(
            [v for v in values if v is not None])
    depth = None
    if scores.depth_items is not None:
        bins = depth_bins or scores.depth_bins or DEFAULT_DEPTH_BINS
        depth = depth_table(scores.depth_items, bins, min_depth_samples)
    summary = summarize(by_length, threshold, partial=bool(incomplete),
                        aggregation=spec.aggregation)
    r = Report(model=scores.model, config=scores.config, dataset=scores.dataset,
                  tasks=tasks, lengths=lengths, cells=cells, summary=summary, depth=depth,
                  mode=scores.mode, incomplete=incomplete, unscored=unscored,
                  selection=scores.selection,
                  intervals=report_intervals(
                      cells, tasks, lengths, summary, key=scores.config,
                      method=method_text(hooks_of(spec).names_weighted_averages(spec))),
                  serving=scores.serving, prompt_check=scores.prompt_check,
                  tied_to_build=scores.tied_to_build if scores.ties_recorded else None,
                  health=scores.health, benchmark=spec.id, axes=recorded_axes(scores),
                  suites=recorded_suites(scores))
    r.hooks.prepare(r, scores)
    return r


def recorded_axes(scores: ScoresRecord) -> dict[str, str]:
    """The scored config's axis values: as scores.json records them; for scores of an older
    ruler (which did not record them), as the manifest of the dataset they were scored on
    records them (`scored_build`); else none (not known). Never read from the config's
    name."""
    if scores.axes is not None:
        return dict(scores.axes)
    if isinstance(scores.extra.get("language"), str):  # how a ruler of 5775704 recorded it
        return {"language": scores.extra["language"]}
    build = scored_build(scores)
    return build.axis_codes() if build is not None else {}


def recorded_suites(scores: ScoresRecord) -> list[str]:
    """The suites built into the scored config: as scores.json records them; for scores of an
    older ruler (which recorded no benchmark either), as the manifest they were scored on
    records them (`scored_build`); else none. Never read from the tasks' names."""
    if scores.suites is not None or scores.benchmark is not None:
        return list(scores.suites or ())
    build = scored_build(scores)
    return list(build.suites or ()) if build is not None else []


def scored_build(scores: ScoresRecord) -> BuildEntry | None:
    """The manifest's entry of the config the scores were made on, when the dataset folder
    they name is at hand and still holds the very files scored (their content hashes); None
    otherwise (a Hub dataset, a folder moved or rebuilt): what scores of an older ruler did
    not record is read there."""
    from ruler.builder.manifest import MANIFEST_NAME, Manifest, data_path

    folder = Path(scores.dataset.spec or "").expanduser()
    if scores.dataset.revision is not None or not (folder / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = Manifest.load(folder)
    except RulerError:
        return None
    build = manifest.build(scores.config)
    same = build is not None and bool(scores.files) and all(
        (f := manifest.file(data_path(scores.config, *cell_of(key)))) is not None
        and f.content_sha256 == sha for key, sha in scores.files.items())
    return build if same else None


def baseline_scores(nc: ScoresRecord, scores: ScoresRecord,
                    where: str) -> dict[tuple[str, int], float | None]:
    """A no-context run's cell scores, after checking it is one, of the same model."""
    if not (nc.variant or {}).get("no_context"):
        raise RulerError(f"{where} is not a run on a --no-context config (config "
                         f"{nc.config!r}): build one with `ruler build ... --no-context` "
                         f"and evaluate the model on it")
    if nc.model != scores.model:
        raise RulerError(f"{where} is a run of model {nc.model!r}, not "
                         f"{scores.model!r}: the baseline must be the same model's")
    return {c.key: c.score for c in nc.cells}


def scores_benchmark(scores: ScoresRecord, tasks: Iterable[str] | None = None) -> str:
    """The benchmark scores.json records (from the manifest's entry of its config); for
    scores of an older ruler, which did not record it, the one the manifest they were scored
    on records (`scored_build`), else `legacy_benchmark` of their tasks (`tasks`, default the
    cells')."""
    if scores.benchmark:
        return scores.benchmark
    build = scored_build(scores)
    if build is not None:
        return build.benchmark_id
    return legacy_benchmark(list(tasks) if tasks is not None else [c.task for c in scores.cells])


def legacy_benchmark(tasks: list[str]) -> str:
    """For scores of an older ruler whose dataset is not at hand only: the one installed
    benchmark whose tasks include all of `tasks`; a RulerError when none or several do (a mean
    over two benchmarks' tasks would be neither's score; a guess would be a wrong report)."""
    found = [b.id for b in BENCHMARK_SPECS.values() if set(tasks) <= set(b.tasks)]
    if len(found) != 1:
        why = (f"benchmarks {' and '.join(found)} both list them" if found else
               "they mix the tasks of several benchmarks, or are those of a plug-in's that is "
               "not installed")
        raise RulerError(f"these scores (of tasks {', '.join(tasks[:4])}) do not record their "
                         f"benchmark, as an older ruler wrote them, and {why}: score the "
                         f"predictions again with `ruler score` (it records the benchmark)")
    return found[0]


def benchmark_title(benchmark: str, package: str | None = None) -> str:
    """A benchmark's name as reports say it (`Benchmark.title`); one not installed is one line
    naming it (and `package`, the one a record names)."""
    return get_benchmark(benchmark, package).title


def run_files(results: Path, scores: ScoresRecord) -> list[str]:
    """The cells a `ruler eval` results folder's run asked for (run.json), when the scores are
    of that folder's predictions: a run interrupted after widening its selection left a
    scores.json of the earlier, smaller one. A run.json that is there but damaged is one
    clear error: without it, cells the run asked for could go unnoticed."""
    folder = results if results.is_dir() else results.parent
    if not (folder / RUN_NAME).is_file():
        return []  # no run here: scores of `ruler score`
    run = read_run(folder / RUN_NAME)
    own = scores.predictions.path if scores.predictions else None
    if run.dataset.config != scores.config or (
            own and own != str((folder / PREDICTIONS_NAME).resolve())):
        return []
    return list(run.dataset.files)


def _fmt(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _head(r: Report) -> list[str]:
    """The report's title, what it covers, how the rows were served, and whether it is
    partial."""
    head = [f"# {md_text(r.title)} results: {md_text(r.model or 'unknown model')}", "",
            f"Dataset {md_code(r.dataset.spec)}"
            + (f" @ {md_code(r.dataset.revision)}" if r.dataset.revision else "")
            + f", tokenizer config {md_code(r.config)}. Asked for: {r.selection_text()}.", ""]
    head += r.hooks.head(r)
    head += serving_markdown(r.serving, r.prompt_check)
    if r.unverified:
        cells = ", ".join(f"{md_text(t)} @ {format_length(L)} ({c.unverified})"
                          for (t, L), c in sorted(r.cells.items(), key=lambda kv: (
                              kv[0][1], task_rank(kv[0][0]))) if c.unverified)
        head += [f"**Unverified rows**: {md_text(r.unverified_text())}. Cells: {cells}.", ""]
    head += hint_markdown(r.reference_hint)
    if not r.complete:
        done, asked = r.rows_done
        head += [f"**Partial results**: {done} of {asked} rows asked for have a result"
                 + (" in the cells scored" if r.unscored else "")
                 + ", so the effective length, Avg. and wAvg. are not given, nor the mean of "
                   "a length with an incomplete cell. Incomplete cells (rows with a result / "
                   "rows asked for): " + ", ".join(map(md_text, r.incomplete_labels())) + ".",
                 ""]
    return head


def _summary_table(r: Report) -> list[str]:
    """The headline numbers: the score per length, the effective length, Avg. and wAvg., with
    their intervals."""
    s = r.summary
    cols = [format_length(L) for L in r.lengths]
    if not s.has_effective_length:
        return _plain_summary(r, cols)
    return ["| Effective length | " + " | ".join(cols) + " | Avg. | wAvg. (inc) | wAvg. (dec) |",
            "|---" * (len(cols) + 4) + "|",
            f"| {r.summary.effective_label} | "
            + " | ".join(_underline(s.by_length[L], s.threshold)
                         + _skip_mark(r, s.by_length[L], L) for L in r.lengths)
            + " | " + " | ".join(_fmt(v) + _skip_mark(r, v)
                                 for v in (s.avg, s.wavg_inc, s.wavg_dec)) + " |",
            *_interval_row(r), *_skip_note(r)]


def _skip_mark(r: Report, value: float | None, L: int | None = None) -> str:
    """"*" after a headline number that rests on fewer rows than were asked for (rows skipped
    as too long for the model) at length L (None: at any length); "" after n/a."""
    skipped = r.skipped_lengths()
    return "*" if value is not None and (L in skipped if L is not None else skipped) else ""


def _skip_note(r: Report) -> list[str]:
    """What the headline's * means, per length."""
    skipped = r.skipped_lengths()
    if not skipped:
        return []
    where = "; ".join(f"{format_length(L)}: {scored} of {done}"
                      for L, (scored, done) in skipped.items())
    return ["", f"\\* Scored on fewer rows than asked for: rows skipped as too long for the "
                f"model count as results but not in the score ({where} rows scored; the "
                f"notes say why)."]


def _per_task(r: Report, title: str, cell: Callable[[str, int], str]) -> list[str]:
    """A section with a table of `cell(task, L)` for every task x length."""
    cols = [format_length(L) for L in r.lengths]
    return [title, "", "| Task | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|",
            *(f"| {md_text(t)} | " + " | ".join(cell(t, L) for L in r.lengths) + " |"
              for t in r.tasks)]


def _task_table(r: Report) -> list[str]:
    """The score of every task x length, with the mean per length."""
    s = r.summary
    table = _per_task(r, "## Scores per task",
                      lambda t, L: _cell(r.cells.get((t, L)), _ci(r, t, L)))
    table.append(f"| **{r.mean_label}** | "
                 + " | ".join(f"**{_fmt(s.by_length[L], 2)}**" + _ci(r, None, L)
                              for L in r.lengths) + " |")
    after = r.hooks.after_tasks(r)
    return table + ([""] + after if after else [])


def headline_markdown(r: Report) -> str:
    """What `ruler eval` prints when it is done: the report's head (what it covers, how the
    rows were served, whether it is partial), the headline numbers and the score of every task
    x length; the rest (row counts, coverage, notes, score by depth) is in report.md."""
    return "\n".join(_head(r) + _summary_table(r) + [""] + _task_table(r)) + "\n"


def to_markdown(r: Report) -> str:
    s = r.summary
    summary = _summary_table(r) if not s.has_effective_length else [
               *_summary_table(r), "",
               f"Per-length score: {s.aggregation.per_length_text(len(r.tasks))}. "
               f"Effective length: the largest length whose score exceeds {s.threshold} at it "
               f"and at every shorter length (scores above it are underlined); weights of "
               f"wAvg: k/{len(r.lengths) * (len(r.lengths) + 1) // 2} for the k-th shortest "
               f"length (inc) or longest (dec).", "", *_uncertainty_text(r)]
    for ref in r.references:
        summary += reference_markdown(ref)
    head, table = _head(r), _task_table(r)
    reasoning = r.mode == "reasoning"
    counts = ["", *_per_task(r, "## Rows: answered / nulls / skipped / failed / missing"
                             + (" / budget exhausted" if reasoning else ""),
                             lambda t, L: _counts(r.cells.get((t, L)), reasoning))]
    if reasoning:
        counts += ["", "Reasoning mode: the answer scored is the text after the model's "
                       "reasoning; *budget exhausted* counts answered rows whose reasoning had "
                       "not ended when the output budget ran out (scored as empty answers, "
                       "i.e. zero; they are among the nulls)."]
    counts += ["", *_per_task(r, "## Coverage: rows with a result / rows asked for",
                              lambda t, L: r.coverage(t, L) or "—"),
               "", "A result is an answer, or a row skipped as longer than the model's "
                   "context; missing and failed rows have none (re-running `ruler eval` "
                   "retries them)."]
    # No "prompt counts ok" for rows not tied to this build (their counts are another's).
    counts += [""] + health_markdown(r.health, r.cells, None if r.unverified else r.serving,
                                     r.baseline)[:-1]
    sections = r.hooks.sections(r)
    table += [""] + sections if sections else []
    notes = _notes(r)
    depth = depth_markdown(r.depth, r.hooks.depth_note(r), r.hooks.depth_group_rule(r)) \
        if r.depth else []
    modes = r.hooks.tail(r)
    return "\n".join(head + summary + table + counts + ([""] + notes if notes else [])
                     + ([""] + depth if depth else []) + ([""] + modes if modes else [])) + "\n"


def _plain_summary(r: Report, cols: list[str]) -> list[str]:
    """The headline of a benchmark without an effective length: the score per length and its
    average over lengths."""
    s, ri = r.summary, r.intervals
    lines = ["| " + " | ".join(cols) + " | Avg. |", "|---" * (len(cols) + 1) + "|",
             "| " + " | ".join(_fmt(s.by_length[L]) + _skip_mark(r, s.by_length[L], L)
                               for L in r.lengths)
             + f" | {_fmt(s.avg)}{_skip_mark(r, s.avg)} |"]
    if ri is not None and any(i is not None for i in ri.by_length.values()):
        lines.append("| " + " | ".join(format_interval(ri.by_length[L]) or "n/a"
                                       for L in r.lengths)
                     + f" | {format_interval(ri.avg) or 'n/a'} |")
    return lines + _skip_note(r) + [
        "", f"Per-length score: {s.aggregation.per_length_text(len(r.tasks))} "
            + s.aggregation.text, "", *_uncertainty_text(r)]


def _ci(r: Report, task: str | None, L: int) -> str:
    """" [low, high]" after a cell's score (task None: the length's mean), "" without one."""
    if r.intervals is None:
        return ""
    i = r.intervals.by_length.get(L) if task is None else r.intervals.cells.get((task, L))
    return f" {format_interval(i)}" if i else ""


def _interval_row(r: Report) -> list[str]:
    """The headline table's second row: the 95 % interval of each number above it, lengths
    where the threshold lies inside it marked ‡."""
    ri = r.intervals
    if ri is None or all(i is None for i in ri.by_length.values()):
        return []
    marked = [format_interval(ri.by_length[L]) + (" ‡" if L in ri.uncertain else "")
              if ri.by_length[L] else "n/a" for L in r.lengths]
    tail = [format_interval(i) or "n/a" for i in (ri.avg, ri.wavg_inc, ri.wavg_dec)]
    return ["| 95 % interval | " + " | ".join(marked + tail) + " |"]


def _uncertainty_text(r: Report) -> list[str]:
    """The uncertain lengths in words, and the method, where the report has intervals."""
    ri = r.intervals
    if ri is None:
        return []
    lines = []
    if ri.uncertain:
        where = ", ".join(format_length(L) for L in ri.uncertain)
        lines += [f"‡ Uncertain at {where}: the interval contains the threshold "
                  f"{r.summary.threshold}, so whether the length passes, and with it the "
                  f"effective length ({r.summary.effective_label}), could go either way at this "
                  f"sample size.", ""]
    return lines + [f"Uncertainty: {ri.method} Score cells show `score [low, high]`.", ""]


def _underline(v: float | None, threshold: float) -> str:
    return "n/a" if v is None else (f"<ins>{v:.1f}</ins>" if v > threshold else f"{v:.1f}")


def _cell(c: CellScore | None, ci: str = "") -> str:
    if c is None:
        return "—"
    flag = "*" if c.skipped or c.errors or c.missing else ""
    return _fmt(c.score, 2) + flag + ci


def _counts(c: CellScore | None, reasoning: bool = False) -> str:
    if c is None:
        return "—"
    text = f"{c.scored}/{c.nulls}/{c.skipped}/{c.errors}/{c.missing}"
    return text + f"/{c.budget_exhausted}" if reasoning else text


def _notes(r: Report) -> list[str]:
    notes = []
    for (t, L), c in sorted(r.cells.items()):
        if c.skipped or c.errors or c.missing:
            why = md_text("; ".join(c.skip_reasons) or "rows missing")
            notes.append(f"- \\* {md_text(t)} @ {format_length(L)}: scored on {c.scored} of "
                         f"{c.rows} rows ({why}; {c.missing} missing)")
        if c.redacted:
            notes.append(f"- {md_text(t)} @ {format_length(L)}: {c.redacted} of {c.scored} "
                         f"answered rows held the API key, which the predictions file stores as "
                         f"<redacted> (the record's `redacted` says where): scored on the "
                         f"answer as generated, the key put back")
        if c.budget_clamped:
            notes.append(f"- {md_text(t)} @ {format_length(L)}: {c.budget_clamped} of {c.scored} "
                         f"answered rows ran with fewer output tokens than their "
                         f"tokens_to_generate: the model's context held the prompt but not "
                         f"the whole budget on top (each row's `output_budget` in the "
                         f"predictions)")
    return (["## Notes", ""] + notes) if notes else []


def to_csv(r: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task", "max_seq_length", "metric", "score", "rows", "scored", "nulls",
                "skipped", "errors", "missing", "budget_exhausted", "ci_low", "ci_high"])
    ri = r.intervals
    for t in r.tasks:
        for L in r.lengths:
            c = r.cells.get((t, L))
            if c:
                w.writerow([t, L, c.metric, "" if c.score is None else c.score,
                            c.rows, c.scored, c.nulls, c.skipped, c.errors,
                            c.missing, c.budget_exhausted,
                            *_csv_interval(ri.cells.get((t, L)) if ri else None)])
    for L in r.lengths:
        v = r.summary.by_length[L]
        w.writerow([r.mean_label, L, "mean", "" if v is None else round(v, 4), "", "", "", "",
                    "", "", "", *_csv_interval(ri.by_length.get(L) if ri else None)])
    return buf.getvalue()


def _csv_interval(i: Interval | None) -> list[Any]:
    return ["", ""] if i is None else i.to_json()


def to_json(r: Report) -> dict[str, Any]:
    s = r.summary
    return {
        "benchmark": r.benchmark,
        "model": r.model, "config": r.config, "mode": r.mode, "dataset": encode(r.dataset),
        "serving": encode(r.serving), "prompt_check": encode(r.prompt_check),
        "tied_to_build": r.tied_to_build.to_json() if r.tied_to_build else None,
        "tasks": r.tasks,
        "lengths": r.lengths,
        "scores": {t: {str(L): r.cells[(t, L)].score for L in r.lengths if (t, L) in r.cells}
                   for t in r.tasks},
        "mean_by_length": {str(L): v for L, v in s.by_length.items()},
        "mean_label": r.mean_label,
        "avg": s.avg, "wavg_inc": s.wavg_inc, "wavg_dec": s.wavg_dec,
        "threshold": s.threshold, "effective_length": s.effective_length,
        "effective_length_label": s.effective_label,
        "complete": r.complete,
        "incomplete_cells": [f"{t}/{L}" for t, L in r.incomplete],
        "coverage": {t: {str(L): r.coverage(t, L) for L in r.lengths
                         if r.coverage(t, L) is not None} for t in r.tasks},
        # scores.json keeps the rows' values; the report only their intervals
        "cells": [{k: v for k, v in r.cells[c].to_json().items()
                   if k not in ("row_scores", "failures")}
                  for c in sorted(r.cells)],
        "intervals": r.intervals.to_json() if r.intervals else None,
        "depth": r.depth.as_json() if r.depth else None,
        "health": None if r.health is None else {
            **fields_json(r.health), "flags": [vars(f) for f in health_flags(
                r.health, r.cells, r.serving, r.baseline)]},
        "references": [c.to_json() for c in r.references],
        "published_for_model": r.reference_hint,
        **r.hooks.json(r),
    }


def plot(r: Report, out: Path) -> list[Path]:
    """scores_by_task.png and scores_overall.png."""
    return [save_png(task_figure(r), out / "scores_by_task.png", dpi=110),
            save_png(overall_figure(r), out / "scores_overall.png", dpi=110)]


def task_figure(r: Report) -> Any:
    """Every task's score by length with its interval; the tasks' markers spread across each
    length's slot, so that tasks with equal scores do not hide each other."""
    import matplotlib.pyplot as plt

    xs = r.lengths
    fig, ax = new_figure((9, 5.5))
    colors = plt.get_cmap("tab20").colors  # 13 tasks: tab10 would repeat colours
    ri = r.intervals
    for n, t in enumerate(r.tasks):
        ys = [r.cells[(t, L)].score if (t, L) in r.cells else None for L in xs]
        cis = [ri.cells.get((t, L)) if ri else None for L in xs]
        at = dodged(range(len(xs)), n, len(r.tasks))
        ax.errorbar(at, [float("nan") if y is None else y for y in ys],
                    yerr=error_bars(ys, cis), marker="osD^v"[n % 5], capsize=3,
                    color=colors[n % len(colors)], label=figure_text(t))
        mark_published(ax, r.references, at, xs, task=t, color=colors[n % len(colors)])
    ax.set_xticks(range(len(xs)), [format_length(L) for L in xs])
    ax.set(xlabel="context length", ylabel="score", ylim=(-2, 102),
           title=f"{r.title} per task: {figure_text(r.model or '')}")
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    ax.grid(alpha=0.3)
    fit_canvas(fig)
    return fig


def overall_figure(r: Report) -> Any:
    """The mean over tasks by length with its interval, the threshold where the benchmark
    has one, and published values where the report has them."""
    xs = r.lengths
    at = list(range(len(xs)))
    ri = r.intervals
    fig, ax = new_figure((7, 4.5))
    means = [r.summary.by_length[L] for L in xs]
    ax.errorbar(at, [float("nan") if m is None else m for m in means], marker="o",
                yerr=error_bars(means, [ri.by_length.get(L) if ri else None for L in xs]),
                capsize=4, label=r.mean_label + (" (95 % interval)" if ri else ""))
    if r.summary.has_effective_length:
        ax.axhline(r.summary.threshold, color="gray", linestyle="--",
                   label=f"threshold {r.summary.threshold}")
    mark_published(ax, r.references, at, xs)
    ax.set_xticks(at, [format_length(L) for L in xs])
    ax.set(xlabel="context length", ylabel="score", ylim=(-2, 102),
           title=f"{r.title} overall: {figure_text(r.model or '')}" + (
               f" (effective {r.summary.effective_label})"
               if r.summary.has_effective_length else ""))
    ax.legend()
    ax.grid(alpha=0.3)
    fit_canvas(fig)
    return fig


def write_report(results: str | Path, out: Path | None = None,
                 threshold: float = DEFAULT_THRESHOLD,
                 dataset_files: dict[str, str] | None = None, plots: bool = True,
                 depth_bins: int | None = None,
                 min_depth_samples: int = DEFAULT_MIN_SAMPLES,
                 references: Sequence[str] = (),
                 reference_files: Sequence[str | Path] = (),
                 no_context: str | Path | None = None) -> Report:
    """Write the report files; `references`: published results (eval.published_results) to
    put beside the run, from the registry and `reference_files`; `no_context`: the results of
    the same model on the config's --no-context variant, shown in the health section."""
    scores = load_scores(results)
    if dataset_files is not None:
        check_revision(scores, dataset_files, str(results))
    r = build_report(scores, threshold, depth_bins, min_depth_samples,
                     asked=run_files(Path(results), scores))
    # Resolved before anything is written: an unknown name writes nothing.
    r.references = comparisons(r, references, reference_files)
    r.reference_hint = [] if references else hint(r, reference_files)
    if no_context is not None:
        baseline = load_scores(no_context)
        r.baseline = baseline_scores(baseline, scores, str(no_context))
        r.hooks.with_no_context(r, scores, baseline, str(no_context))
    r.plots = plots
    out = Path(out or (results if Path(results).is_dir() else Path(results).parent))
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "report.md", to_markdown(r))
    write_text_atomic(out / "report.csv", to_csv(r))
    write_json_atomic(out / "report.json", to_json(r))
    if r.references:
        write_text_atomic(out / "report_reference.csv", reference_csv(r.references))
    if r.depth:
        write_text_atomic(out / "report_depth.csv", depth_csv(r.depth))
    if plots:
        plot(r, out)
        if r.depth and r.depth.tasks:
            write_heatmaps(r.depth, out, r.model)
        r.hooks.figures(r, out)
    return r
