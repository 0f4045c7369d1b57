"""What every figure of the reports shares: a canvas that holds all it draws, markers that do
not hide each other, and the save.

A figure's size is chosen for its data (a heatmap's width per length), but its title, legend
and labels carry text of any length (a model name, a legend sentence): at one length the
canvas is narrower than such a text, and `tight_layout` alone cannot help (it moves the axes,
it does not grow the canvas). `fit_canvas` lays the figure out and grows the canvas until
everything drawn lies on it.

Several series at one x (every task at one length) draw their markers on top of each other,
so all but the last are hidden: `dodged` spreads them across the length's slot.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Sequence

from ruler.kernel.atomic import replacing

#: Room kept between the outermost text and the canvas's edge, in inches.
PAD_INCHES = 0.05
#: The share of a length's slot the dodged markers of its series spread over.
DODGE_SPREAD = 0.6


def fit_canvas(fig: Any, rect: tuple[float, float, float, float] = (0, 0, 1, 1),
               rounds: int = 4) -> None:
    """Lay `fig` out (`tight_layout` within `rect`) and grow its canvas by whatever a title,
    legend or label still sticks out, until nothing does."""
    for _ in range(rounds):
        with warnings.catch_warnings():
            # "not applied: axes decorations too wide": the canvas grows below
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout(rect=rect)
        box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
        width, height = fig.get_size_inches()
        grow_x = max(0.0, PAD_INCHES - box.x0) + max(0.0, box.x1 - width + PAD_INCHES)
        grow_y = max(0.0, PAD_INCHES - box.y0) + max(0.0, box.y1 - height + PAD_INCHES)
        if grow_x <= 0.01 and grow_y <= 0.01:
            return
        fig.set_size_inches(width + grow_x, height + grow_y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout(rect=rect)


def dodged(slots: Sequence[float], series: int, of: int) -> list[float]:
    """The x of series `series` (0-based, of `of`) at each slot: spread evenly over
    DODGE_SPREAD of the slot's width, centred on it, so that equal values stay visible."""
    if of <= 1:
        return [float(x) for x in slots]
    step = DODGE_SPREAD / (of - 1)
    return [x - DODGE_SPREAD / 2 + series * step for x in slots]


def new_figure(figsize: tuple[float, float]) -> tuple[Any, Any]:
    """A figure and its axes, drawn for files only (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def error_bars(ys: Sequence[float | None], intervals: Sequence[Any]) -> list[list[float]]:
    """Matplotlib's asymmetric yerr ([below], [above]) of values and their intervals (`.low`,
    `.high`): 0 where there is no interval."""
    below = [0.0 if y is None or i is None else max(0.0, y - i.low) for y, i in zip(ys, intervals)]
    above = [0.0 if y is None or i is None else max(0.0, i.high - y)
             for y, i in zip(ys, intervals)]
    return [below, above]


def save_png(fig: Any, path: Path, dpi: int) -> Path:
    """Write `fig` to `path` as PNG (atomically) and close it."""
    import matplotlib.pyplot as plt

    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)
    return path
