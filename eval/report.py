"""`ruler report`: a results folder's scores as the paper's Table 3 (Markdown, CSV, JSON, PNG).

Input is the `scores.json` that `ruler eval` / `ruler score` wrote. Output: per task x length
scores, the mean over tasks per length, Avg., wAvg. (inc), wAvg. (dec), the effective context
length at a threshold, and per-cell nulls / skipped / failed / missing counts, so an
incomplete cell is visible instead of looking like a score. Score by depth bin per task and
length (eval.depth), with depth x length heatmaps (eval.depth_report), where the scores hold
the answered rows' gold depths.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruler.builder.errors import RulerError
from ruler.builder.manifest import write_json_atomic
from ruler.builder.tasks.catalog import TASKS
from ruler.eval.aggregate import DEFAULT_THRESHOLD, Summary, format_length, summarize
from ruler.eval.depth import DEFAULT_DEPTH_BINS, DEFAULT_MIN_SAMPLES, DepthTables, depth_table
from ruler.eval.depth_report import HEATMAP_DIR, depth_csv, depth_markdown, write_heatmaps
from ruler.eval.results_folder import SCORES_NAME
from ruler.eval.score import SCORES_FORMAT

REPORT_FILES = ("report.md", "report.csv", "report.json", "scores_by_task.png",
                "scores_overall.png", "report_depth.csv", HEATMAP_DIR)


@dataclass
class Report:
    model: str | None
    config: str
    dataset: dict[str, Any]
    tasks: list[str]
    lengths: list[int]
    cells: dict[tuple[str, int], dict[str, Any]]
    summary: Summary
    depth: DepthTables | None = None  # None: scores.json has no depth items (older scores)
    mode: str | None = None  # "reasoning": the report counts rows that ran out of budget

    @property
    def mean_label(self) -> str:
        n = len(self.tasks)
        return "Mean (13 tasks)" if n == len(TASKS) else f"Mean ({n} task{'s' * (n != 1)})"


def load_scores(results: str | Path) -> dict[str, Any]:
    path = Path(results)
    path = path / SCORES_NAME if path.is_dir() else path
    if not path.is_file():
        raise RulerError(f"{path} not found: run `ruler eval` or `ruler score` first")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != SCORES_FORMAT:
        raise RulerError(f"{path} is not a ruler scores file (format {data.get('format')!r})")
    return data


def check_revision(scores: dict[str, Any], dataset_files: dict[str, str], where: str) -> None:
    """Refuse scores made from other rows than the given dataset's (content hashes differ)."""
    changed = sorted(k for k, sha in scores["dataset"]["files"].items()
                     if k in dataset_files and dataset_files[k] != sha)
    absent = sorted(k for k in scores["dataset"]["files"] if k not in dataset_files)
    if changed or absent:
        raise RulerError(f"{where} was scored on a different revision of the dataset: "
                         f"{', '.join((changed + absent)[:5])} differ(s) or are absent")


def build_report(scores: dict[str, Any], threshold: float = DEFAULT_THRESHOLD,
                 depth_bins: int | None = None,
                 min_depth_samples: int = DEFAULT_MIN_SAMPLES) -> Report:
    """The report of a scores.json. Depth bins: `depth_bins`, else the depth-swept dataset
    config's own, else DEFAULT_DEPTH_BINS."""
    cells = {(c["task"], int(c["max_seq_length"])): c for c in scores["cells"]}
    if not cells:
        raise RulerError("the scores hold no (task, length) cell")
    order = {t: i for i, t in enumerate(TASKS)}
    tasks = sorted({t for t, _ in cells}, key=lambda t: (order.get(t, 99), t))
    lengths = sorted({L for _, L in cells})
    by_length: dict[int, float | None] = {}
    for L in lengths:
        values = [cells[(t, L)]["score"] if (t, L) in cells else None for t in tasks]
        # A length misses a task or a score: its mean would be over other tasks than the rest.
        by_length[L] = None if any(v is None for v in values) else sum(values) / len(values)
    depth = None
    if "depth_items" in scores:
        bins = depth_bins or scores.get("depth_bins") or DEFAULT_DEPTH_BINS
        depth = depth_table(scores["depth_items"], bins, min_depth_samples)
    return Report(scores.get("model"), scores["config"], scores["dataset"], tasks, lengths,
                  cells, summarize(by_length, threshold), depth, scores.get("mode"))


def _fmt(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def to_markdown(r: Report) -> str:
    s = r.summary
    head = [f"# RULER results: {r.model or 'unknown model'}", "",
            f"Dataset `{r.dataset.get('spec')}`"
            + (f" @ `{r.dataset['revision']}`" if r.dataset.get("revision") else "")
            + f", tokenizer config `{r.config}`.", ""]
    cols = [format_length(L) for L in r.lengths]
    summary = ["| Effective length | " + " | ".join(cols) + " | Avg. | wAvg. (inc) | wAvg. (dec) |",
               "|---" * (len(cols) + 4) + "|",
               f"| {r.summary.effective_label} | "
               + " | ".join(_underline(s.by_length[L], s.threshold) for L in r.lengths)
               + f" | {_fmt(s.avg)} | {_fmt(s.wavg_inc)} | {_fmt(s.wavg_dec)} |", "",
               f"Per-length score: the plain mean of the {len(r.tasks)} task scores. "
               f"Effective length: the largest length whose score exceeds {s.threshold} at it "
               f"and at every shorter length (scores above it are underlined); weights of "
               f"wAvg: k/{len(r.lengths) * (len(r.lengths) + 1) // 2} for the k-th shortest "
               f"length (inc) or longest (dec).", ""]
    table = ["## Scores per task", "", "| Task | " + " | ".join(cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for t in r.tasks:
        table.append(f"| {t} | " + " | ".join(_cell(r.cells.get((t, L))) for L in r.lengths)
                     + " |")
    table.append(f"| **{r.mean_label}** | "
                 + " | ".join(f"**{_fmt(s.by_length[L], 2)}**" for L in r.lengths) + " |")
    reasoning = r.mode == "reasoning"
    counts = ["", "## Rows: answered / nulls / skipped / failed / missing"
              + (" / budget exhausted" if reasoning else ""), "",
              "| Task | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for t in r.tasks:
        counts.append(f"| {t} | " + " | ".join(_counts(r.cells.get((t, L)), reasoning)
                                               for L in r.lengths) + " |")
    if reasoning:
        counts += ["", "Reasoning mode: the answer scored is the text after the model's "
                       "reasoning; *budget exhausted* counts answered rows whose reasoning had "
                       "not ended when the output budget ran out (scored as empty answers, "
                       "i.e. zero; they are among the nulls)."]
    notes = _notes(r)
    depth = depth_markdown(r.depth) if r.depth else []
    return "\n".join(head + summary + table + counts + ([""] + notes if notes else [])
                     + ([""] + depth if depth else [])) + "\n"


def _underline(v: float | None, threshold: float) -> str:
    return "n/a" if v is None else (f"<ins>{v:.1f}</ins>" if v > threshold else f"{v:.1f}")


def _cell(c: dict | None) -> str:
    if c is None:
        return "—"
    flag = "*" if c["skipped"] or c["errors"] or c["missing"] else ""
    return _fmt(c["score"], 2) + flag


def _counts(c: dict | None, reasoning: bool = False) -> str:
    if c is None:
        return "—"
    text = f"{c['scored']}/{c['nulls']}/{c['skipped']}/{c['errors']}/{c['missing']}"
    return text + f"/{c.get('budget_exhausted', 0)}" if reasoning else text


def _notes(r: Report) -> list[str]:
    notes = []
    for (t, L), c in sorted(r.cells.items()):
        if c["skipped"] or c["errors"] or c["missing"]:
            why = "; ".join(c.get("skip_reasons") or []) or "rows missing"
            notes.append(f"- \\* {t} @ {format_length(L)}: scored on {c['scored']} of "
                         f"{c['rows']} rows ({why}; {c['missing']} missing)")
    return (["## Notes", ""] + notes) if notes else []


def to_csv(r: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task", "max_seq_length", "metric", "score", "rows", "scored", "nulls",
                "skipped", "errors", "missing", "budget_exhausted"])
    for t in r.tasks:
        for L in r.lengths:
            c = r.cells.get((t, L))
            if c:
                w.writerow([t, L, c["metric"], "" if c["score"] is None else c["score"],
                            c["rows"], c["scored"], c["nulls"], c["skipped"], c["errors"],
                            c["missing"], c.get("budget_exhausted", 0)])
    for L in r.lengths:
        v = r.summary.by_length[L]
        w.writerow([r.mean_label, L, "mean", "" if v is None else round(v, 4), "", "", "", "",
                    "", "", ""])
    return buf.getvalue()


def to_json(r: Report) -> dict[str, Any]:
    s = r.summary
    return {
        "model": r.model, "config": r.config, "mode": r.mode, "dataset": r.dataset,
        "tasks": r.tasks,
        "lengths": r.lengths,
        "scores": {t: {str(L): r.cells[(t, L)]["score"] for L in r.lengths if (t, L) in r.cells}
                   for t in r.tasks},
        "mean_by_length": {str(L): v for L, v in s.by_length.items()},
        "mean_label": r.mean_label,
        "avg": s.avg, "wavg_inc": s.wavg_inc, "wavg_dec": s.wavg_dec,
        "threshold": s.threshold, "effective_length": s.effective_length,
        "effective_length_label": s.effective_label,
        "cells": [r.cells[k] for k in sorted(r.cells)],
        "depth": r.depth.as_json() if r.depth else None,
    }


def plot(r: Report, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    xs = r.lengths
    labels = [format_length(L) for L in xs]
    paths = []
    fig, ax = plt.subplots(figsize=(9, 5.5))
    colors = plt.get_cmap("tab20").colors  # 13 tasks: tab10 would repeat colours
    for n, t in enumerate(r.tasks):
        ys = [r.cells[(t, L)]["score"] if (t, L) in r.cells else None for L in xs]
        ax.plot(labels, [float("nan") if y is None else y for y in ys], marker="osD^v"[n % 5],
                color=colors[n % len(colors)], label=t)
    ax.set(xlabel="context length", ylabel="score", ylim=(-2, 102),
           title=f"RULER per task: {r.model or ''}")
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(out / "scores_by_task.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    means = [r.summary.by_length[L] for L in xs]
    ax.plot(labels, [float("nan") if m is None else m for m in means], marker="o",
            label=r.mean_label)
    ax.axhline(r.summary.threshold, color="gray", linestyle="--",
               label=f"threshold {r.summary.threshold}")
    ax.set(xlabel="context length", ylabel="score", ylim=(-2, 102),
           title=f"RULER overall: {r.model or ''} (effective {r.summary.effective_label})")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(out / "scores_overall.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def write_report(results: str | Path, out: Path | None = None,
                 threshold: float = DEFAULT_THRESHOLD,
                 dataset_files: dict[str, str] | None = None, plots: bool = True,
                 depth_bins: int | None = None,
                 min_depth_samples: int = DEFAULT_MIN_SAMPLES) -> Report:
    scores = load_scores(results)
    if dataset_files is not None:
        check_revision(scores, dataset_files, str(results))
    r = build_report(scores, threshold, depth_bins, min_depth_samples)
    out = Path(out or (results if Path(results).is_dir() else Path(results).parent))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(to_markdown(r), encoding="utf-8")
    (out / "report.csv").write_text(to_csv(r), encoding="utf-8")
    write_json_atomic(out / "report.json", to_json(r))
    if r.depth:
        (out / "report_depth.csv").write_text(depth_csv(r.depth), encoding="utf-8")
    if plots:
        plot(r, out)
        if r.depth and r.depth.tasks:
            write_heatmaps(r.depth, out, r.model)
    return r
