"""ONERULER's part of `ruler report`: the language and metric of a run, accuracy per task over
its lengths, and, over several languages' runs of one model, the paper's language x length
table and heatmaps.

ONERULER builds one dataset config per language (`<tokenizer>--oneruler-<lang>`, or
`--oneruler-<context>-<instructions>` cross-lingually), so a model evaluated in several
languages is several runs. A run's language is the one its scores.json records, from the
manifest's entry of its config (`Report.axes`), never read from the config's name.
`ruler report RUN RUN ...` over them pools the runs by model into the paper's tables
(language x length, language x task, per-task micro accuracy: each table's caption in
`to_markdown` says how its cells and intervals are made) and heatmaps (languages by their
Avg., highest first, on a fixed 0-100 colour scale).

Cross-lingual runs (5 NIAH tasks: upstream's CWE refuses `--xling`) get tables of their own:
their means are over other tasks. Runs scored with different metrics (`oneruler`,
`oneruler_corrected`) are refused: their numbers do not compare.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, TypeVar

from ruler.benchmarks.oneruler.tasks import UPSTREAM_NAMES as ONERULER_UPSTREAM_NAMES
from ruler.benchmarks.ruler.failure_modes.report_hooks import RulerFamilyReport
from ruler.catalog.benchmarks import in_task_order
from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval, score_interval, weighted_mean_interval
from ruler.eval.records.scores_record import CellScore
from ruler.eval.report.depth import COLORMAP, HEATMAP_DPI
from ruler.eval.report.figures import fit_canvas, save_png
from ruler.eval.report.run import Report
from ruler.kernel.atomic import write_json_atomic, write_text_atomic
from ruler.kernel.errors import RulerError
from ruler.kernel.file_names import safe_name
from ruler.kernel.markup import figure_text, md_code, md_text

_T = TypeVar("_T")

#: What each ONERULER metric is, for the report's head.
METRIC_TEXT = {
    "oneruler": "upstream's (OneRuler eval/evaluate.py, as the paper scores): a row is right "
                "or wrong; numbers: every gold value and no other multi-digit number, the "
                "answer failed by a none-word anywhere in it (case-sensitive); niah_none: the "
                "none-word as a substring, case-insensitive; cwe: every gold word as a "
                "substring",
    "oneruler_corrected": "upstream's with its documented flaws fixed (`ruler score --metric "
                          "oneruler_corrected`): case folded everywhere, none-words and gold "
                          "words only as whole words, numbers written with thousands "
                          "separators read as one number; not comparable with the paper's "
                          "numbers",
}

#: Where `ruler report RUN RUN ...` (with --out) writes the language heatmaps.
LANGUAGE_HEATMAP_DIR = "language_heatmaps"
#: The single run's task x length heatmap.
TASK_HEATMAP = "scores_heatmap.png"



def run_language(r: Report) -> str:
    """The run's language code as its scores record it: "ko", or "en-ko" (context en,
    instructions ko); a RulerError where they record none (scores of an older ruler whose
    dataset is not at hand: `eval.report.run.recorded_axes`)."""
    if r.axes.get("language") is None:
        raise RulerError(f"the scores of {r.config} record no language ({NOT_RECORDED})")
    return str(r.axes["language"])


#: Why a run's language may be unknown, and what to do.
NOT_RECORDED = ("scored by an older ruler, and the dataset it was scored on is not at hand to "
                "read it from: score the predictions again with `ruler score`, which records "
                "it")


def language_text(code: str) -> str:
    if "-" in code:
        context, instructions = code.split("-")
        return (f"cross-lingual: context (book, needles, keys) `{context}`, instructions "
                f"(task, question, none-word) `{instructions}`")
    return f"`{code}`"


def report_metric(r: Report) -> str:
    """The one metric the run's cells were scored with."""
    metrics = sorted({c.metric for c in r.cells.values() if c.metric})
    if len(metrics) > 1:
        raise RulerError(f"the scores of {r.config} mix metrics ({', '.join(metrics)}): score "
                         f"every cell with one (`ruler score --metric`)")
    return metrics[0] if metrics else "oneruler"


def _score(cell: CellScore | None) -> float | None:
    return cell.score if cell is not None else None


def upstream_name(task: str) -> str:
    return ONERULER_UPSTREAM_NAMES.get(task, task)


# --- accuracy over pooled rows ----------------------------------------------------------------

def _known(values: Sequence[_T | None]) -> list[_T] | None:
    """`values`, or None when one of them is unknown."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def _rows(cell: CellScore | None) -> list[float] | None:
    rows = cell.row_scores if cell is not None else None
    return [float(v) for _, v in rows] if rows else None


@dataclass(frozen=True)
class Pooled:
    """An accuracy over pooled rows (0..100) and its 95 % interval; None: no row."""

    score: float | None
    interval: Interval | None
    rows: int

    def text(self) -> str:
        if self.score is None:
            return "n/a"
        ci = f" [{self.interval.low:.1f}, {self.interval.high:.1f}]" if self.interval else ""
        return f"{self.score:.1f}{ci}"

    def to_json(self) -> dict[str, Any]:
        return {"score": None if self.score is None else round(self.score, 4),
                "ci95": self.interval.to_json() if self.interval else None, "rows": self.rows}


def pooled(cells: Sequence[CellScore | None], key: str) -> Pooled:
    """The accuracy over every answered row of `cells` (micro), when each recorded its rows."""
    rows: list[float] = []
    for c in cells:
        values = _rows(c)
        if values is None:
            return Pooled(None, None, 0)
        rows += values
    if not rows:
        return Pooled(None, None, 0)
    return Pooled(100 * sum(rows) / len(rows), score_interval(rows, key=key), len(rows))


# --- heatmaps ---------------------------------------------------------------------------------

def grid_heatmap(values: Sequence[Sequence[float | None]], rows: Sequence[str],
                 columns: Sequence[str], title: str, xlabel: str, ylabel: str, path: Path) -> Path:
    """A heatmap with a cell per (row, column), its value written in it, on a fixed 0-100
    scale (grey: no value), as a PNG at `path`; the canvas grows to hold its title
    (`figures.fit_canvas`)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    grid = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    fig, ax = plt.subplots(figsize=(2.2 + 0.85 * len(columns), 1.3 + 0.32 * len(rows)),
                           dpi=HEATMAP_DPI)
    cmap = plt.get_cmap(COLORMAP).with_extremes(bad="#d9d9d9")
    mesh = ax.pcolormesh(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=100,
                         edgecolors="white", linewidth=0.5)
    for y, row in enumerate(values):
        for x, v in enumerate(row):
            r_, g, b, _ = cmap(mesh.norm(v)) if v is not None else (1, 1, 1, 1)
            dark = 0.299 * r_ + 0.587 * g + 0.114 * b < 0.45
            ax.text(x + 0.5, y + 0.5, "—" if v is None else f"{v:.0f}", ha="center",
                    va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks([x + 0.5 for x in range(len(columns))], list(map(figure_text, columns)),
                  fontsize=7, rotation=30 if max(map(len, columns), default=0) > 6 else 0)
    ax.set_yticks([y + 0.5 for y in range(len(rows))], list(map(figure_text, rows)), fontsize=7)
    ax.invert_yaxis()  # the first row at the top
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.set_title(figure_text(title), fontsize=9)
    fig.colorbar(mesh, ax=ax, label="accuracy", fraction=0.06, pad=0.03)
    fit_canvas(fig)
    return save_png(fig, path, dpi=HEATMAP_DPI)


def write_task_heatmap(r: Report, out: Path) -> Path:
    """The single run's task x length heatmap (`scores_heatmap.png`)."""
    values = [[_score(r.cells.get((t, L))) for L in r.lengths] for t in r.tasks]
    return grid_heatmap(values, r.tasks, [format_length(L) for L in r.lengths],
                        f"ONERULER {r.axes.get('language') or 'language not recorded'}: "
                        f"{r.model or 'unknown model'}",
                        "context length", "task", out / TASK_HEATMAP)


# --- several languages ------------------------------------------------------------------------

@dataclass
class LanguageTable:
    """One model's runs in several languages (all monolingual, or all cross-lingual)."""

    model: str
    metric: str
    cross_lingual: bool
    languages: list[str]  # ordered by Avg., highest first
    lengths: list[int]
    tasks: list[str]
    where: dict[str, str]  # language -> results folder
    by_length: dict[str, dict[int, Pooled]]  # language -> L -> the mean over tasks
    avg: dict[str, Pooled]  # language -> Avg. over lengths
    all_languages: dict[int, Pooled]  # L -> the mean over languages
    by_task: dict[str, dict[str, Pooled]]  # language -> task -> accuracy over lengths
    task_micro: dict[str, dict[int | str, Pooled]]  # task -> L (or "all") -> over languages
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        kind = "cross-lingual (context-instructions)" if self.cross_lingual else "languages"
        return f"{self.model}: {len(self.languages)} {kind}"

    def to_json(self) -> dict[str, Any]:
        def js(d: dict) -> dict:
            return {str(k): v.to_json() for k, v in d.items()}

        return {"model": self.model, "metric": self.metric, "cross_lingual": self.cross_lingual,
                "languages": self.languages, "lengths": self.lengths, "tasks": self.tasks,
                "results": self.where,
                "language_by_length": {g: js(v) for g, v in self.by_length.items()},
                "language_avg": js(self.avg), "all_languages": js(self.all_languages),
                "language_by_task": {g: js(v) for g, v in self.by_task.items()},
                "task_micro_accuracy": {t: js(v) for t, v in self.task_micro.items()},
                "notes": self.notes}


def _interval(r: Report, L: int | None) -> Interval | None:
    ri = r.intervals
    if ri is None:
        return None
    return ri.avg if L is None else ri.by_length.get(L)


def language_tables(runs: Sequence[tuple[str, Report]]) -> list[LanguageTable]:
    """The language tables of ONERULER runs (`where`, report): one per model and kind
    (monolingual, cross-lingual). A RulerError for runs that do not pool."""
    if not runs:
        raise RulerError("no runs to report")
    other = [w for w, r in runs if r.benchmark != "oneruler"]
    if other:
        raise RulerError(f"{other[0]} is not a ONERULER run: the language table pools "
                         f"ONERULER runs only (report the others apart)")
    metrics = {w: report_metric(r) for w, r in runs}
    if len(set(metrics.values())) > 1:
        shown = ", ".join(f"{w}: {m}" for w, m in metrics.items())
        raise RulerError(f"the runs were scored with different metrics ({shown}): their numbers "
                         f"do not compare; rescore them with one (`ruler score --metric`)")
    groups: dict[tuple[str, bool], list[tuple[str, str, Report]]] = {}
    for where, r in runs:
        code = run_language(r)
        groups.setdefault((r.model or "unknown model", "-" in code), []).append((where, code, r))
    return [_table(model, cross, members, metrics[members[0][0]])
            for (model, cross), members in sorted(groups.items())]


def _table(model: str, cross: bool, members: list[tuple[str, str, Report]],
           metric: str) -> LanguageTable:
    seen: dict[str, str] = {}
    for where, code, _ in members:
        if code in seen:
            raise RulerError(f"{seen[code]} and {where} are both runs of {model} in {code}: "
                             f"report one run per language (replicates: `ruler report` them "
                             f"apart)")
        seen[code] = where
    lengths = sorted({L for _, _, r in members for L in r.lengths})
    tasks = in_task_order({t for _, _, r in members for t in r.tasks})
    # the mean of a length's task scores: with equal rows per task, also their rows' accuracy
    by_length = {code: {L: Pooled(r.summary.by_length.get(L), _interval(r, L),
                                  sum(len(_rows(r.cells.get((t, L))) or []) for t in r.tasks))
                        for L in lengths}
                 for _, code, r in members}
    avg = {code: Pooled(r.summary.avg, _interval(r, None),
                        sum(len(_rows(c) or []) for c in r.cells.values()))
           for _, code, r in members}
    key = f"oneruler/{model}/{'x' if cross else 'mono'}"
    all_languages = {}
    for L in lengths:
        means = _known([by_length[code][L].score for _, code, _ in members])
        cells = _known([_rows(r.cells.get((t, L))) for _, _, r in members for t in r.tasks])
        if means is None or cells is None:
            all_languages[L] = Pooled(None, None, 0)
            continue
        weights = [1 / len(r.tasks) for _, _, r in members for _ in r.tasks]
        all_languages[L] = Pooled(sum(means) / len(means),
                                  weighted_mean_interval(cells, weights, key=f"{key}/all/{L}"),
                                  sum(len(c) for c in cells))
    by_task = {code: {t: pooled([r.cells.get((t, L)) for L in r.lengths],
                                f"{key}/{code}/{t}") if t in r.tasks else Pooled(None, None, 0)
                      for t in tasks}
               for _, code, r in members}
    task_micro: dict[str, dict[int | str, Pooled]] = {}
    for t in tasks:
        having = [r for _, _, r in members if t in r.tasks]
        row: dict[int | str, Pooled] = {
            L: pooled([r.cells.get((t, L)) for r in having], f"{key}/task/{t}/{L}")
            for L in lengths}
        row["all"] = pooled([r.cells.get((t, L)) for r in having for L in r.lengths],
                            f"{key}/task/{t}/all")
        task_micro[t] = row
    order = sorted(seen, key=lambda c: (avg[c].score is None, -(avg[c].score or 0), c))
    notes = [f"{code}: {', '.join(format_length(L) for L in lengths if L not in r.lengths)} "
             f"not run" for _, code, r in members if set(r.lengths) != set(lengths)]
    notes += [f"{code}: partial (rows missing or failed): the means it withholds are n/a"
              for _, code, r in members if not r.complete]
    return LanguageTable(model, metric, cross, order, lengths, tasks, seen, by_length, avg,
                         all_languages, by_task, task_micro, notes)


def to_markdown(tables: Sequence[LanguageTable]) -> str:
    lines = ["# ONERULER: accuracy by language", ""]
    for tb in tables:
        cols = [format_length(L) for L in tb.lengths]
        lines += [f"## {md_text(tb.title)}", "",
                  f"Metric: {md_code(tb.metric)}: {METRIC_TEXT.get(tb.metric, '')}.", "",
                  "### Language x length", "",
                  "| Language | " + " | ".join(cols) + " | Avg. |",
                  "|---" * (len(cols) + 2) + "|"]
        for code in tb.languages:
            lines.append(f"| {md_text(code)} | " + " | ".join(tb.by_length[code][L].text()
                                                      for L in tb.lengths)
                         + f" | {tb.avg[code].text()} |")
        lines.append("| **All** | " + " | ".join(f"**{tb.all_languages[L].text()}**"
                                                  for L in tb.lengths) + " | |")
        lines += ["", f"A cell: the mean of the language's {len(tb.tasks)} task scores at that "
                      f"length, `[95 % interval]` (a bootstrap resampling each task's rows); "
                      f"Avg.: over the lengths; All: the mean over the languages. Languages "
                      f"by Avg., highest first.", "",
                  "### Language x task (all lengths)", "",
                  "| Language | " + " | ".join(map(md_text, tb.tasks)) + " |",
                  "|---" * (len(tb.tasks) + 1) + "|"]
        for code in tb.languages:
            lines.append(f"| {md_text(code)} | " + " | ".join(tb.by_task[code][t].text()
                                                      for t in tb.tasks) + " |")
        lines += ["", "A cell: the accuracy over the language's rows of the task at every "
                      "length (Wilson interval).", "",
                  "### Per-task micro accuracy (all languages)", "",
                  "| Task (upstream's name) | " + " | ".join(cols) + " | All lengths |",
                  "|---" * (len(cols) + 2) + "|"]
        for t in tb.tasks:
            row = tb.task_micro[t]
            lines.append(f"| {md_text(t)} ({md_text(upstream_name(t))}) | "
                         + " | ".join(row[L].text() for L in tb.lengths)
                         + f" | {row['all'].text()} |")
        lines += ["", "Every language's rows of the task pooled (micro accuracy), per length "
                      "and over all lengths (Wilson interval).", ""]
        if tb.notes:
            lines += ["Notes:", ""] + [f"- {md_text(n)}" for n in tb.notes] + [""]
    return "\n".join(lines)


def to_csv(tables: Sequence[LanguageTable]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "metric", "table", "language", "task", "max_seq_length", "score",
                "ci_low", "ci_high", "rows"])

    def row(tb: LanguageTable, table: str, language: str, task: str, L: Any, p: Pooled):
        ci = p.interval.to_json() if p.interval else ["", ""]
        w.writerow([tb.model, tb.metric, table, language, task, L,
                    "" if p.score is None else round(p.score, 4), *ci, p.rows])

    for tb in tables:
        for code in tb.languages:
            for L in tb.lengths:
                row(tb, "language_by_length", code, "", L, tb.by_length[code][L])
            row(tb, "language_by_length", code, "", "avg", tb.avg[code])
        for L in tb.lengths:
            row(tb, "language_by_length", "all", "", L, tb.all_languages[L])
        for code in tb.languages:
            for t in tb.tasks:
                row(tb, "language_by_task", code, t, "all", tb.by_task[code][t])
        for t in tb.tasks:
            for column, p in tb.task_micro[t].items():
                row(tb, "task_micro_accuracy", "all", t, column, p)
    return buf.getvalue()


def to_json(tables: Sequence[LanguageTable]) -> dict[str, Any]:
    return {"benchmark": "oneruler", "tables": [tb.to_json() for tb in tables]}


def _stems(tables: Sequence[LanguageTable]) -> list[str]:
    """Each table's file stem: its model as one safe file name (`safe_name`: a model string
    is the user's, `..`, `/` or 300 characters long), `_xling` for cross-lingual tables, and a
    table whose stem an earlier one took gets the hash of its model (`a/b`, `a b`)."""
    stems: list[str] = []
    for tb in tables:
        stem = safe_name(tb.model, fallback="model", last_part=False) \
            + ("_xling" if tb.cross_lingual else "")
        if stem in stems:
            stem += "-" + hashlib.sha256(tb.model.encode("utf-8", "surrogatepass")) \
                .hexdigest()[:12]
        stems.append(stem)
    return stems


def write_language_heatmaps(tables: Sequence[LanguageTable], out: Path) -> list[Path]:
    """Per table: `<model>[_xling]_language_length.png` and `..._language_task.png`."""
    folder = out / LANGUAGE_HEATMAP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for tb, stem in zip(tables, _stems(tables)):
        paths.append(grid_heatmap(
            [[tb.by_length[c][L].score for L in tb.lengths] for c in tb.languages],
            tb.languages, [format_length(L) for L in tb.lengths],
            f"ONERULER accuracy, language x length: {tb.model}", "context length", "language",
            folder / f"{stem}_language_length.png"))
        paths.append(grid_heatmap(
            [[tb.by_task[c][t].score for t in tb.tasks] for c in tb.languages],
            tb.languages, [upstream_name(t) for t in tb.tasks],
            f"ONERULER accuracy, language x task (all lengths): {tb.model}", "task",
            "language", folder / f"{stem}_language_task.png"))
    return paths


class OnerulerReport(RulerFamilyReport):
    """ONERULER's report: the run's language and metric in its head, its accuracy per task over
    all lengths, a task x length heatmap; over several runs, the language tables."""

    def head(self, r: Report) -> list[str]:
        """The language and which metric ran."""
        metric = report_metric(r)
        code = r.axes.get("language")
        language = language_text(code) if code else f"not recorded ({NOT_RECORDED})"
        return [f"Language: {language}.", "",
                f"Metric: {md_code(metric)}: {METRIC_TEXT.get(metric, 'not a ONERULER metric')}.",
                ""]

    def sections(self, r: Report) -> list[str]:
        """Each task's accuracy over its rows of every length."""
        lines = ["## ONERULER: accuracy per task over all lengths", "",
                 "| Task (upstream's name) | Rows | Accuracy [95 % interval] |", "|---|---|---|"]
        for t in r.tasks:
            over = pooled([r.cells.get((t, L)) for L in r.lengths], f"{r.config}/task/{t}")
            lines.append(f"| {md_text(t)} ({md_text(upstream_name(t))}) | {over.rows} | "
                         f"{over.text()} |")
        return lines + ["", "Each task's rows of every length pooled (micro accuracy); a row is "
                            "right or wrong. `ruler report RUN RUN ...` over the model's runs in "
                            "other languages gives the language x length table and heatmaps."]

    def json(self, r: Report) -> dict[str, Any]:
        # the run's language ("ko"; "en-ko": context en, instructions ko) and the metric that
        # scored it
        return {**super().json(r), "language": r.axes.get("language"),
                "metric": report_metric(r)}

    def figures(self, r: Report, out: Path) -> None:
        write_task_heatmap(r, out)

    def several(self, cfg: Any, runs: Sequence[tuple[str, Report]]) -> int:
        """`ruler report RUN RUN ...` of ONERULER runs: per model, the language x length
        table, language x task, per-task micro accuracy and heatmaps."""
        if cfg.table or cfg.reference:
            raise RulerError("--table and --reference are RULER's Table 3 and published "
                             "results; ONERULER runs make the language table (no flag needed)")
        tables = language_tables(runs)
        print(to_markdown(tables), end="")
        if cfg.out:
            cfg.out.mkdir(parents=True, exist_ok=True)
            write_text_atomic(cfg.out / "report_languages.md", to_markdown(tables))
            write_text_atomic(cfg.out / "report_languages.csv", to_csv(tables))
            write_json_atomic(cfg.out / "report_languages.json", to_json(tables))
            if cfg.plots:
                write_language_heatmaps(tables, cfg.out)
            print(f"wrote {cfg.out}/report_languages.md, .csv, .json"
                  + (" and language_heatmaps/" if cfg.plots else ""))
        return 0


REPORT = OnerulerReport()
