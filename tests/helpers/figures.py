"""Checks on the figures the reports draw: every text on the canvas, markers not hidden."""

from __future__ import annotations

from typing import Any

#: Pixels a text may overhang the canvas (anti-aliasing of the outermost glyph).
TOLERANCE = 1.0


def _texts(fig: Any) -> list[Any]:
    """The texts drawn: titles, axis labels, tick labels of drawn ticks, texts on the axes
    (heatmap cells), legends' texts, the figure's own texts and legends."""
    found = list(fig.texts)
    for legend in fig.legends:
        found += [legend.get_title(), *legend.get_texts()]
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label,
                  *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):
            found += [t.label1 for t in axis._update_ticks() if t.label1.get_visible()]
        legend = ax.get_legend()
        if legend is not None:
            found += [legend.get_title(), *legend.get_texts()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def outside_canvas(fig: Any) -> list[str]:
    """What sticks out of the canvas after drawing: texts (by their text), legends and axes
    (with everything they draw), each named with its overhang in pixels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    parts = [(repr(t.get_text()), t.get_window_extent(renderer)) for t in _texts(fig)]
    parts += [(f"legend {n}", lg.get_window_extent(renderer)) for n, lg in
              enumerate([*fig.legends, *(ax.get_legend() for ax in fig.axes)]) if lg]
    parts += [(f"axes {n} with its decorations", ax.get_tightbbox(renderer))
              for n, ax in enumerate(fig.axes)]
    out = []
    for name, box in parts:
        over = max(canvas.x0 - box.x0, canvas.y0 - box.y0, box.x1 - canvas.x1,
                   box.y1 - canvas.y1)
        if over > TOLERANCE:
            out.append(f"{name}: {over:.0f} px outside")
    return out


def marker_points(ax: Any) -> list[tuple[str, tuple[float, float]]]:
    """Every marker of a labelled line on `ax`, as (the line's label, (display x, y))."""
    import numpy as np

    points = []
    # an error bar's label is its container's; its data line is the container's first line
    labels = {id(c.lines[0]): c.get_label() for c in ax.containers
              if getattr(c, "lines", None) and c.lines[0] is not None}
    for line in ax.get_lines():
        label = labels.get(id(line), line.get_label())
        if line.get_marker() in (None, "", "None", " ") or label.startswith("_"):
            continue  # a line without markers, an error bar's cap
        xy = ax.transData.transform(line.get_xydata())  # categories converted to numbers
        points += [(label, (round(x, 1), round(y, 1))) for x, y in xy
                   if np.isfinite(x) and np.isfinite(y)]
    return points
