"""The paper's figures for a suite run (`ruler build --suite NAME`, then `ruler report`): for
each panel of the suites the scored config records (`Report.suites`, from its manifest entry:
never read from the tasks' names), the score by length of each of its configurations, one line
per configuration with the label the suite gives it (Figure 2's and Figure 3's panels), with
the same model's no-context lines where `--no-context RUN0` gives them (Figure 3 right); and
for a panel with `shares` (the CWE copying pair), the share of the answered rows whose primary
failure label is one of them, by length (Section 5's "over 80 % ... copied from the one-shot
example").

report.md gets a section per panel: its figure's link (when the figures are drawn) and its
table of configuration x length scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ruler.catalog.suites import Suite, SuiteTask, benchmark_suites
from ruler.eval.metrics.aggregate import format_length
from ruler.eval.metrics.intervals import Interval, wilson
from ruler.eval.report.figures import dodged, error_bars, fit_canvas, new_figure, save_png
from ruler.eval.report.run import Report
from ruler.kernel.markup import figure_text, md_code, md_text

DPI = 110


@dataclass(frozen=True)
class Line:
    """One configuration of a panel: its label, source tag, and values by length (None: no
    value at that length) with their 95 % intervals."""

    label: str
    source: str
    values: tuple[float | None, ...]
    intervals: tuple[Interval | None, ...]
    colour: int = 0  # the configuration's place in its panel (its colour in the figure)
    no_context: bool = False  # the same model without the context (a dashed line)


@dataclass(frozen=True)
class Panel:
    """One panel of a recorded suite, with the lines it draws."""

    suite: Suite
    scores: tuple[Line, ...]
    no_context: tuple[Line, ...]  # the same configurations without the context
    shares: tuple[Line, ...]  # the share of `suite.shares` labels among the answered rows

    @property
    def figure(self) -> str:
        return f"suite_{self.suite.name}.png"

    @property
    def shares_figure(self) -> str:
        return f"suite_{self.suite.name}_shares.png"


def panels(r: Report) -> list[Panel]:
    """The panels of the suites `r` records, each once (a suite recorded beside the section
    that gathers it is drawn once), in the order recorded; panels none of whose
    configurations were scored are left out."""
    offered = benchmark_suites(r.spec)
    seen: dict[str, Suite] = {}
    for name in r.suites:
        if name in offered:
            for panel in offered[name].drawn_panels:
                seen.setdefault(panel.name, panel)
    out = [_panel(r, s) for s in seen.values()]
    return [p for p in out if p.scores]


def _panel(r: Report, suite: Suite) -> Panel:
    tasks = [t for t in suite.tasks if any((t.name, L) in r.cells for L in r.lengths)]
    ri = r.intervals
    scores = tuple(Line(t.label, t.source,
                        tuple(_score(r, t.name, L) for L in r.lengths),
                        tuple(ri.cells.get((t.name, L)) if ri else None for L in r.lengths),
                        colour=n)
                   for n, t in enumerate(tasks))
    base = r.baseline or {}
    no_context = tuple(Line(f"{t.label} (w/o context)", t.source,
                            tuple(base.get((t.name, L)) for L in r.lengths),
                            tuple(None for _ in r.lengths), colour=n, no_context=True)
                       for n, t in enumerate(tasks)
                       if any((t.name, L) in base for L in r.lengths))
    shares = tuple(_share_line(r, n, t, suite.shares) for n, t in enumerate(tasks)) \
        if suite.shares else ()
    return Panel(suite, scores, no_context, tuple(s for s in shares if s is not None))


def _score(r: Report, task: str, L: int) -> float | None:
    c = r.cells.get((task, L))
    return None if c is None else c.score


def _share_line(r: Report, n: int, t: SuiteTask, labels: Sequence[str]) -> Line | None:
    """The share (0..100) of t's answered rows whose primary label is one of `labels`, with
    its Wilson interval; None when no cell of t is labelled (older scores)."""
    failures = r.failures
    if failures is None:
        return None
    values: list[float | None] = []
    intervals: list[Interval | None] = []
    for L in r.lengths:
        cell = failures.cell(t.name, L)
        if cell is None or not cell.answered:
            values.append(None)
            intervals.append(None)
            continue
        k = sum(cell.labels[label] for label in labels)
        values.append(100 * k / cell.answered)
        intervals.append(wilson(k, cell.answered))
    return Line(t.label, t.source, tuple(values), tuple(intervals), colour=n) \
        if any(v is not None for v in values) else None


# --- report.md --------------------------------------------------------------------------------

def markdown(r: Report, found: Sequence[Panel]) -> list[str]:
    """report.md's section: per panel, its figure and its table."""
    if not found:
        return []
    cols = [format_length(L) for L in r.lengths]
    lines = ["## Suite figures", "",
             "The panels of the suites built into this config (" + ", ".join(
                 md_code(s) for s in r.suites) + "): the score of each configuration by "
             "length, labelled as the suite labels it; its source says where its values come "
             "from ([paper] the paper's text, [figure] a figure's legend, [inferred] our "
             "reading, [ours] our choice).", ""]
    for p in found:
        lines += [f"### {md_text(p.suite.title)} ({md_code(p.suite.name)})", ""]
        if r.plots:
            lines += [f"![{md_text(p.suite.title)}]({p.figure})", ""]
        lines += _table(cols, "score", (*p.scores, *p.no_context), digits=1)
        if p.shares:
            what = " or ".join(md_code(s) for s in p.suite.shares)
            lines += [f"Share of the answered rows (%) whose primary failure label is {what}:",
                      ""]
            if r.plots:
                lines += [f"![{md_text(p.suite.title)}: copying share]({p.shares_figure})", ""]
            lines += _table(cols, "share (%)", p.shares, digits=1)
    return lines


def _table(cols: list[str], what: str, lines: Sequence[Line], digits: int) -> list[str]:
    out = ["| Configuration | Source | " + " | ".join(f"{what} {c}" for c in cols) + " |",
           "|---" * (len(cols) + 2) + "|"]
    for line in lines:
        out.append(f"| {md_text(line.label)} | {line.source} | " + " | ".join(
            "—" if v is None else f"{v:.{digits}f}" for v in line.values) + " |")
    return out + [""]


# --- figures ----------------------------------------------------------------------------------

def figures(r: Report, out: Path, found: Sequence[Panel]) -> list[Path]:
    """One PNG per panel (and one per panel with shares), written into `out`."""
    written = []
    for p in found:
        written.append(save_png(_figure(r, p.suite.title, (*p.scores, *p.no_context), "score"),
                                out / p.figure, DPI))
        if p.shares:
            written.append(save_png(
                _figure(r, p.suite.title, p.shares, "share of outputs (%)",
                        "share labelled " + " or ".join(p.suite.shares)),
                out / p.shares_figure, DPI))
    return written


def _figure(r: Report, title: str, lines: Sequence[Line], ylabel: str, what: str = "") -> Any:
    """The lines by length; titled with the panel's title, then what is drawn (`what`) and the
    model on a line of their own."""
    import matplotlib.pyplot as plt

    xs = list(range(len(r.lengths)))
    fig, ax = new_figure((7, 4.5))
    of = 1 + max(line.colour for line in lines)
    # tab10's colours are distinct; App. C's 18 configurations need tab20's
    colors = plt.get_cmap("tab10" if of <= 10 else "tab20").colors
    for line in lines:
        ys = [float("nan") if v is None else v for v in line.values]
        # equal scores at one length: the markers spread across its slot stay visible
        ax.errorbar(dodged(xs, line.colour, of), ys,
                    yerr=error_bars(line.values, line.intervals), capsize=3,
                    marker="osD^v"[line.colour % 5], linestyle="--" if line.no_context else "-",
                    color=colors[line.colour % len(colors)], label=figure_text(line.label))
    ax.set_xticks(xs, [format_length(L) for L in r.lengths])
    ax.set(xlabel="context length", ylabel=ylabel, ylim=(-2, 102),
           title="\n".join(figure_text(t) for t in (title, ": ".join(
               x for x in (what, r.model or "") if x)) if t))
    # beside the axes: a panel's lines cross the whole plot (App. C has 18 of them)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    fit_canvas(fig)
    return fig
