"""Every figure the reports draw holds its texts on its canvas, at one length and at many
(issue 40 #24: the depth heatmap's legend, the language x length heatmap's title and
compare.png's title were cut at one length), and tasks with equal scores at one length do not
hide each other's markers.

Each figure is drawn through the function that writes it; `Figure.savefig` is wrapped to look
at the figure as it is saved: every title, label, tick label, legend and cell text, drawn,
lies inside the figure's canvas (`get_window_extent(renderer)` against `fig.bbox`).
"""

from __future__ import annotations

import matplotlib
import pytest

from helpers.figures import marker_points, outside_canvas
from helpers.scores import alternating, right, scores, wrong
from ruler.benchmarks.oneruler.report import (
    language_tables,
    write_language_heatmaps,
    write_task_heatmap,
)
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.eval.metrics.depth import depth_table
from ruler.eval.report.compare import compare_scores
from ruler.eval.report.compare import plot as compare_plot
from ruler.eval.report.depth import write_heatmaps
from ruler.eval.report.reference import comparisons
from ruler.eval.report.reference import plot as reference_plot
from ruler.eval.report.run import build_report, plot

matplotlib.use("Agg")

ONE = (4096,)
MANY = (4096, 8192, 16384, 32768, 65536, 131072)
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
LONG_MODEL = "an-organisation-with-a-long-name/Some-Model-70B-Instruct-2407-preview-q4"


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs: (file name, what sticks out of its canvas,
    the figure)."""
    from matplotlib.figure import Figure

    found = []
    original = Figure.savefig

    def savefig(fig, fname, *args, **kwargs):
        found.append((getattr(fname, "name", str(fname)), outside_canvas(fig), fig))
        return original(fig, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return found


def _clipped(saved) -> list:
    return [(name, out) for name, out, _ in saved if out]


@pytest.mark.parametrize("lengths", [ONE, MANY], ids=["one length", "six lengths"])
def test_the_report_s_figures_hold_their_texts(lengths, saved, tmp_path):
    r = build_report(scores(MODEL, "qwen2.5", STANDARD_TASKS, lengths, alternating))
    r.references = comparisons(r, ["ruler-readme/meta-llama-3.1-8b-instruct"])
    plot(r, tmp_path)
    long = build_report(scores(LONG_MODEL, "qwen2.5", STANDARD_TASKS[:2], lengths, right))
    plot(long, tmp_path / "long")
    assert len(saved) == 4 and not _clipped(saved)


@pytest.mark.parametrize("lengths", [ONE, MANY], ids=["one length", "six lengths"])
def test_depth_heatmaps_and_their_legends_hold_their_texts(lengths, saved, tmp_path):
    """A hatched cell adds a legend under the map: a sentence wider than a one-length map."""
    items = {f"{t}/{L}": [[(i % 10) / 10 + 0.05, float(i % 3 != 0)] for i in range(n)]
             for t, n in (("niah_single_1", 30), ("niah_multikey_1", 4)) for L in lengths}
    t = depth_table(items, bins=10, min_samples=5)
    write_heatmaps(t, tmp_path, LONG_MODEL)
    assert len(saved) == 3 and all(fig.legends for _, _, fig in saved)
    assert not _clipped(saved)


@pytest.mark.parametrize("lengths", [ONE, MANY], ids=["one length", "six lengths"])
def test_oneruler_heatmaps_hold_their_titles(lengths, saved, tmp_path):
    runs = [(f"runs/{code}", build_report(scores(MODEL, f"llama-3.1--oneruler-{code}",
                                                 ONERULER_TASKS, lengths, values,
                                                 metric="oneruler", language=code)))
            for code, values in (("en", right), ("ko", alternating), ("de", wrong))]
    write_language_heatmaps(language_tables(runs), tmp_path)
    write_task_heatmap(runs[1][1], tmp_path)
    assert len(saved) == 3 and not _clipped(saved)


@pytest.mark.parametrize("lengths", [ONE, MANY], ids=["one length", "six lengths"])
def test_comparison_figures_hold_their_titles(lengths, saved, tmp_path):
    a = scores(LONG_MODEL, "qwen2.5", STANDARD_TASKS, lengths, alternating)
    b = scores(MODEL, "qwen2.5", STANDARD_TASKS, lengths, right)
    compare_plot(compare_scores(a, b), tmp_path / "compare.png")
    (c,) = comparisons(build_report(a), ["ruler-readme/meta-llama-3.1-8b-instruct"])
    reference_plot(c, tmp_path / "reference.png")
    assert len(saved) == 2 and not _clipped(saved)


def test_tasks_with_equal_scores_at_one_length_stay_visible(saved, tmp_path):
    """Thirteen tasks at 100 at 4K were thirteen markers on one point: one showed."""
    plot(build_report(scores(MODEL, "qwen2.5", STANDARD_TASKS, ONE, right)), tmp_path)
    by_task = saved[0][2].axes[0]
    points = [xy for label, xy in marker_points(by_task) if label in STANDARD_TASKS]
    assert len(points) == 13 and len(set(points)) == 13
    xs = sorted(x for x, _ in points)
    assert min(b - a for a, b in zip(xs, xs[1:])) >= 8  # pixels apart: each marker shows
    a = scores(MODEL, "qwen2.5", STANDARD_TASKS, ONE, right)
    b = scores(MODEL, "qwen2.5", STANDARD_TASKS, ONE, wrong)
    compare_plot(compare_scores(a, b), tmp_path / "compare.png")
    drawn = marker_points(saved[-1][2].axes[0])
    points = [xy for label, xy in drawn if label in STANDARD_TASKS]
    (overall,) = [xy for label, xy in drawn if label.startswith("all tasks")]
    assert len(points) == 13 and len({*points, overall}) == 14  # none behind the overall


def test_the_docs_equivalence_figure_holds_its_texts(saved, tmp_path, monkeypatch):
    """The docs' one figure (docs/make_equivalence_plot.py), drawn into tmp_path."""
    import importlib.util

    from helpers.paths import ROOT

    spec = importlib.util.spec_from_file_location("make_equivalence_plot",
                                                  ROOT / "docs" / "make_equivalence_plot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "IMAGE", tmp_path / "equivalence.png")
    module.main()
    assert len(saved) == 1 and not _clipped(saved)


def test_a_model_name_with_dollar_signs_is_drawn_as_written(saved, tmp_path):
    """`$...$` in a name started matplotlib's mathtext: `$\\badcmd{x}$` failed the drawing with
    a ParseFatalException traceback, `$x$` drew an italic x. Every title shows the name."""
    name = "org/m$\\badcmd{x}$ costs $5"
    r = build_report(scores(name, "qwen2.5", STANDARD_TASKS[:2], ONE, right))
    plot(r, tmp_path)
    other = scores("n", "qwen2.5", STANDARD_TASKS[:2], ONE, alternating)
    compare_plot(compare_scores(scores(name, "qwen2.5", STANDARD_TASKS[:2], ONE, right), other),
                 tmp_path / "compare.png")
    titles = [fig.axes[0].get_title() for _, _, fig in saved]
    assert len(titles) == 3 and all(r"org/m\$\badcmd{x}\$ costs \$5" in t for t in titles)
    assert not _clipped(saved)
