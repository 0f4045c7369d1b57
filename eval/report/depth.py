"""The score-by-depth part of `ruler report`: Markdown, CSV and depth x length heatmaps.

Tables come from `eval.metrics.depth.DepthTables`; the JSON form is `DepthTables.as_json()`.
Heatmaps put depth on the vertical axis (0 = start of the context, at the top, as
needle-in-a-haystack pictures do) and length on the horizontal one, one cell per (depth bin,
length), coloured on a fixed 0-100 scale so pictures of different models compare; a cell scored on
fewer items than the minimum (a group's cell: where one of its tasks has) is hatched and labelled
with its count, and a legend under the map says so.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Sequence

from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.depth import DepthCell, DepthTables
from ruler.eval.report.figures import fit_canvas, save_png
from ruler.kernel.file_names import safe_name
from ruler.kernel.markup import figure_text, md_text

#: Heatmaps go in this folder of the report's output folder.
HEATMAP_DIR = "depth_heatmaps"
#: The file name of the heatmap over all niah tasks (per-task heatmaps are <task>.png).
NIAH_HEATMAP = "niah.png"
NIAH_GROUP = "all niah"
COLORMAP = "RdYlGn"
HEATMAP_DPI = 110


def _pct(x: float) -> str:
    return f"{100 * x:.3g}"


def bin_label(b: int, bins: int) -> str:
    """'30-40%' for bin 3 of 10."""
    return f"{_pct(b / bins)}-{_pct((b + 1) / bins)}%"


def _fmt_cell(c: DepthCell | None) -> str:
    if c is None or c.score is None:
        return "—"
    return f"{c.score:.1f} ({c.n}){' †' if c.too_few else ''}"


def _table(cells_by_length: dict[int, list[DepthCell]], lengths: Sequence[int],
           bins: int) -> list[str]:
    lines = ["| depth | " + " | ".join(format_length(L) for L in lengths) + " |",
             "|---" * (len(lengths) + 1) + "|"]
    for b in range(bins):
        row = [cells_by_length[L][b] if L in cells_by_length else None for L in lengths]
        lines.append(f"| {bin_label(b, bins)} | " + " | ".join(map(_fmt_cell, row)) + " |")
    return lines


def depth_markdown(t: DepthTables, how_counted: str, group_rule: bool = True) -> list[str]:
    """The report's "Score by depth" section; `how_counted`: how the benchmark's tasks place
    their gold items (`ReportHooks.depth_note`); `group_rule`: whether it says how the group
    table's cells are marked (`ReportHooks.depth_group_rule`)."""
    if not t.tasks:
        return []
    group = (f" (in the {NIAH_GROUP} table, cells where a task has fewer than {t.min_samples} "
             f"items or none: each task weighs the same in its mean)") if group_rule else ""
    lines = ["## Score by depth", "",
             f"Score (x100) of the gold items in each of {t.bins} depth bins of the context "
             f"(0% = its start), with the number of items scored in brackets; † marks cells "
             f"with fewer than {t.min_samples} items{group}, and the heatmaps hatch them. "
             f"{how_counted}",
             ""]
    if t.niah:
        lines += [f"### {NIAH_GROUP} ({len(t.niah_tasks)} tasks, each weighted equally)", ""]
        lines += _table(t.niah, t.lengths, t.bins) + [""]
    for task in t.tasks:
        lines += [f"### {md_text(task)}", ""] + _table(t.cells[task], t.lengths, t.bins) + [""]
    return lines[:-1]


def depth_csv(t: DepthTables) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task", "max_seq_length", "bin", "depth_lo", "depth_hi", "score", "n",
                "too_few"])
    groups = [(NIAH_GROUP, t.niah)] if t.niah else []
    for name, by_L in groups + [(task, t.cells[task]) for task in t.tasks]:
        for L, cells in by_L.items():
            for c in cells:
                w.writerow([name, L, c.bin, c.lo, c.hi, "" if c.score is None
                            else round(c.score, 4), c.n, int(c.too_few)])
    return buf.getvalue()


def hatch_meaning(t: DepthTables, group: bool) -> str:
    """Why a cell of a heatmap is hatched (the legend's text): a task's cell holds fewer than
    the minimum items; a group's cell has a task whose cell does, or that has none there
    (`depth.group_cells`), whatever the group's own count."""
    if not group:
        return f"hatched: fewer than {t.min_samples} items in the cell (n = items)"
    return (f"hatched: a task has fewer than {t.min_samples} items in the cell, or none\n"
            f"(each of the {len(t.niah_tasks)} tasks weighs the same in the mean; n = items "
            f"of all tasks)")


def heatmap_figure(cells_by_length: dict[int, list[DepthCell]], lengths: Sequence[int],
                   bins: int, title: str, hatched: str = "hatched: too few items"):
    """A matplotlib figure: one cell per (depth bin, length); where a cell is hatched, a legend
    below the map says why (`hatched`, from `hatch_meaning`). Returns (figure, axes, mesh)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    grid = np.full((bins, len(lengths)), np.nan)
    for x, L in enumerate(lengths):
        for c in cells_by_length.get(L, []):
            if c.score is not None:
                grid[c.bin, x] = c.score
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * len(lengths), 1.2 + 0.36 * bins),
                           dpi=HEATMAP_DPI)
    cmap = plt.get_cmap(COLORMAP).with_extremes(bad="#d9d9d9")  # grey: no item in the cell
    mesh = ax.pcolormesh(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=100,
                         edgecolors="white", linewidth=0.5)
    for x, L in enumerate(lengths):
        for c in cells_by_length.get(L, []):
            text = "—" if c.score is None else f"{c.score:.0f}"
            if c.too_few:
                ax.add_patch(Rectangle((x, c.bin), 1, 1, fill=False, hatch="///",
                                       edgecolor="#333333", linewidth=0))
                text += f"\nn={c.n}"
            r, g, b, _ = cmap(mesh.norm(c.score)) if c.score is not None else (1, 1, 1, 1)
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.45  # white text on dark cells
            ax.text(x + 0.5, c.bin + 0.5, text, ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    ax.set_xticks([x + 0.5 for x in range(len(lengths))], [format_length(L) for L in lengths])
    ax.set_yticks([b + 0.5 for b in range(bins)], [bin_label(b, bins) for b in range(bins)],
                  fontsize=7)
    ax.invert_yaxis()  # depth 0 (start of the context) at the top
    ax.set(xlabel="context length", ylabel="depth of the gold item in the context")
    ax.set_title(figure_text(title), fontsize=9)
    fig.colorbar(mesh, ax=ax, label="score", fraction=0.06, pad=0.03)
    if any(c.too_few for cells in cells_by_length.values() for c in cells):
        fig.set_figheight(fig.get_figheight() + 0.45)
        legend = fig.legend(handles=[Patch(facecolor="white", edgecolor="#333333",
                                           hatch="///", label=hatched)],
                            loc="lower center", fontsize=7, frameon=False)
        # the maps above the legend, however tall it is (two lines for a group's)
        fit_canvas(fig, rect=(0, _legend_share(fig, legend), 1, 1))
    else:
        fit_canvas(fig)
    return fig, ax, mesh


def _legend_share(fig, legend) -> float:
    """The share of the figure's height a legend at its bottom takes, with a little room."""
    height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    return min(0.5, (height + 0.1) / fig.get_figheight())


def write_heatmaps(t: DepthTables, out: Path, model: str | None) -> list[Path]:
    """`out/depth_heatmaps/niah.png` and `<task>.png` for every task with depth items."""
    folder = out / HEATMAP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    who = model or "unknown model"
    jobs = [(NIAH_HEATMAP, t.niah, f"{NIAH_GROUP} ({len(t.niah_tasks)} tasks): {who}",
             hatch_meaning(t, group=True))] if t.niah else []
    # a task name read from scores.json is one plain file name (`../../x` is no file here)
    jobs += [(f"{safe_name(task, fallback='task')}.png", t.cells[task], f"{task}: {who}",
              hatch_meaning(t, group=False)) for task in t.tasks]
    return [save_png(heatmap_figure(cells, t.lengths, t.bins, title, hatched)[0], folder / name,
                     dpi=HEATMAP_DPI) for name, cells, title, hatched in jobs]
