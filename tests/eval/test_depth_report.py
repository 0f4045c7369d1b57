"""Score by depth: the math on hand-made rows and predictions, the report's tables read back
from its JSON and CSV, and the heatmap PNG checked cell by cell."""

from __future__ import annotations

import csv
import json

import matplotlib.image as mpimg
import numpy as np
import pytest

from ruler.eval.metrics.depth import bin_cells, group_cells, row_items
from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
from ruler.eval.report.depth import HEATMAP_DIR, NIAH_HEATMAP, hatch_meaning, heatmap_figure
from ruler.eval.report.run import build_report, to_markdown, write_report

NEEDLE = "One of the special magic numbers for {k} is: {v}."


def niah_row(task: str, needles: list[tuple[str, str]], queried: list[str],
             depths: list[float], outputs: list[str]) -> dict:
    lines = ["The grass is green."] + [NEEDLE.format(k=k, v=v) for k, v in needles]
    question = ("What are all the special magic numbers for "
                + (", ".join(queried[:-1]) + ", and " + queried[-1] if len(queried) > 1
                   else queried[0]) + " mentioned in the provided text?")
    return {"task": task, "input": "\n".join(lines + [question]), "outputs": outputs,
            "metric": "string_match_all", "gold_depths": depths}


# --- items per row ---------------------------------------------------------------------------

def test_single_needle_row_is_one_item_at_its_depth():
    row = niah_row("niah_single_1", [("a-b", "1234567")], ["a-b"], [0.42], ["1234567"])
    assert row_items(row, " 1234567.") == [(0.42, 1.0)]
    assert row_items(row, "7654321") == [(0.42, 0.0)]


def test_multivalue_counts_each_needle_at_its_own_depth():
    # needles in the input: 111 (depth .1), 222 (.5), 333 (.3 -- the list is by position,
    # so depths sort with them), 444 (.8); the outputs list them in another order
    row = niah_row("niah_multivalue", [("k-k", "1110000"), ("k-k", "2220000"),
                                       ("k-k", "3330000"), ("k-k", "4440000")],
                   ["k-k"], [0.8, 0.1, 0.3, 0.5],
                   ["4440000", "1110000", "2220000", "3330000"])
    items = row_items(row, "2220000 and 4440000")
    assert items == [(0.1, 0.0), (0.3, 1.0), (0.5, 0.0), (0.8, 1.0)]
    # the per-needle hits average to upstream's string_match_all of the row
    assert sum(s for _, s in items) / 4 == 0.5


def test_multiquery_reads_values_of_the_queried_keys_only():
    row = niah_row("niah_multiquery", [("a-a", "1000001"), ("x-x", "9999999"),
                                       ("b-b", "2000002")],
                   ["b-b", "a-a"], [0.2, 0.6], ["2000002", "1000001"])
    assert row_items(row, "1000001") == [(0.2, 1.0), (0.6, 0.0)]


def test_qa_rows_count_once_at_their_gold_documents_mean_and_vt_at_its_first_line():
    qa = {"task": "qa_2", "input": "", "outputs": ["Paris", "paris city"],
          "metric": "string_match_part", "gold_depths": [0.7, 0.3]}
    assert row_items(qa, "It is Paris.") == [(0.5, 1.0)]
    vt = {"task": "vt", "input": "", "outputs": ["AAAAA", "BBBBB"],
          "metric": "string_match_all", "gold_depths": [0.05, 0.5]}
    assert row_items(vt, "AAAAA") == [(0.05, 0.5)]
    cwe = {"task": "cwe", "input": "", "outputs": ["w"], "metric": "string_match_all",
           "gold_depths": []}
    assert row_items(cwe, "w") == []


# --- binning -------------------------------------------------------------------------------

def test_bins_mean_and_count_items_and_flag_thin_cells():
    items = [[0.05, 1.0], [0.09, 0.0], [0.5, 1.0], [0.5, 1.0], [0.5, 0.0], [1.0, 1.0]]
    cells = bin_cells(items, 4, min_samples=3)
    assert [(c.score, c.n, c.too_few) for c in cells] == [
        (50.0, 2, True), (None, 0, True), (pytest.approx(200 / 3), 3, False), (100.0, 1, True)]
    assert [(c.lo, c.hi) for c in cells] == [(0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)]


def test_niah_group_is_the_mean_of_its_tasks():
    a = bin_cells([[0.1, 1.0]] * 4, 2, 2)
    b = bin_cells([[0.1, 0.0]] * 2 + [[0.9, 1.0]] * 3, 2, 2)
    g = group_cells([a, b], 2)
    assert (g[0].score, g[0].n, g[0].too_few) == (50.0, 6, False)
    assert (g[1].score, g[1].n, g[1].too_few) == (100.0, 3, True)  # task a has no item there


# --- the report ------------------------------------------------------------------------------

def _scores(depth_items: dict, depth_bins: int | None = None) -> dict:
    cells = []
    for key in depth_items:
        task, L = key.split("/")
        cells.append({"task": task, "max_seq_length": int(L), "metric": "string_match_all",
                      "score": 50.0, "rows": 8, "scored": 8, "nulls": 0, "skipped": 0,
                      "errors": 0, "missing": 0, "data_sha256": "x", "skip_reasons": []})
    return {"format": SCORES_FORMAT, "dataset": {"spec": "d", "revision": None, "files": {}},
            "config": "gpt-4--depth4", "model": "m", "cells": cells, "missing": [],
            "unknown": [], "depth_items": depth_items, "depth_bins": depth_bins}


ITEMS = {
    "niah_single_1/1024": [[0.1, 1.0], [0.2, 1.0], [0.3, 0.0], [0.6, 0.0], [0.9, 1.0]],
    "niah_single_1/2048": [[0.1, 0.0], [0.4, 1.0], [0.6, 1.0], [0.7, 1.0], [0.8, 0.0]],
    "niah_multivalue/1024": [[0.05, 1.0], [0.1, 0.0], [0.55, 1.0], [0.95, 1.0]],
    "qa_1/1024": [[0.3, 1.0]],
    "cwe/1024": [],
}


def test_report_json_and_csv_hold_the_depth_table(tmp_path):
    (tmp_path / "scores.json").write_text(json.dumps(_scores(ITEMS, depth_bins=4)))
    write_report(tmp_path, plots=False, min_depth_samples=2)
    depth = json.loads((tmp_path / "report.json").read_text())["depth"]
    assert depth["bins"] == 4 and depth["edges"] == [0, 0.25, 0.5, 0.75, 1.0]
    assert depth["task_order"] == ["niah_single_1", "niah_multivalue", "qa_1"]  # cwe: none
    assert set(depth["tasks"]) == set(depth["task_order"]) and depth["lengths"] == [1024, 2048]

    def cells(part):
        return [(c["score"], c["n"], c["too_few"]) for c in part]

    assert cells(depth["tasks"]["niah_single_1"]["1024"]) == [
        (100.0, 2, False), (0.0, 1, True), (0.0, 1, True), (100.0, 1, True)]
    assert cells(depth["tasks"]["niah_single_1"]["2048"]) == [
        (0.0, 1, True), (100.0, 1, True), (100.0, 2, False), (0.0, 1, True)]
    assert cells(depth["tasks"]["niah_multivalue"]["1024"]) == [
        (50.0, 2, False), (None, 0, True), (100.0, 1, True), (100.0, 1, True)]
    # all niah: the mean of the two tasks per bin; 2048 has no multivalue items
    assert cells(depth["niah"]["1024"]) == [
        (75.0, 4, False), (0.0, 1, True), (50.0, 2, True), (100.0, 2, True)]
    assert depth["niah"]["2048"][2]["score"] == 100.0 and depth["niah"]["2048"][2]["too_few"]
    rows = list(csv.DictReader((tmp_path / "report_depth.csv").open()))
    got = {(r["task"], r["max_seq_length"], r["bin"]): (r["score"], r["n"]) for r in rows}
    assert got[("niah_single_1", "1024", "0")] == ("100.0", "2")
    assert got[("all niah", "1024", "0")] == ("75.0", "4")
    assert got[("niah_multivalue", "1024", "1")] == ("", "0")
    md = (tmp_path / "report.md").read_text()
    assert "## Score by depth" in md and "| 0-25% | 100.0 (2) | 0.0 (1) † |" in md


def test_report_bins_default_to_10_and_can_be_set(tmp_path):
    r = build_report(ScoresRecord.from_json(_scores(ITEMS)))
    assert r.depth.bins == 10 and len(r.depth.cells["qa_1"][1024]) == 10
    four = ScoresRecord.from_json(_scores(ITEMS, depth_bins=4))
    assert build_report(four, depth_bins=5).depth.bins == 5
    old = _scores(ITEMS)
    del old["depth_items"]  # scores written before depth items existed
    old = ScoresRecord.from_json(old)
    assert build_report(old).depth is None and "Score by depth" not in to_markdown(
        build_report(old))


def _cell_pixel(fig, ax, x: int, y: int, png_height: int) -> tuple[int, int]:
    """Pixel (row, col) inside cell (length x, bin y), near its top-left corner (the label
    sits in the middle)."""
    px, py = ax.transData.transform((x + 0.15, y + 0.15))
    return int(round(png_height - py)), int(round(px))


def test_heatmap_png_has_one_cell_per_bin_and_length_coloured_by_its_score(tmp_path):
    import matplotlib.pyplot as plt

    (tmp_path / "scores.json").write_text(json.dumps(_scores(ITEMS, depth_bins=4)))
    r = write_report(tmp_path, min_depth_samples=1)
    folder = tmp_path / HEATMAP_DIR
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [NIAH_HEATMAP, "niah_single_1.png", "niah_multivalue.png", "qa_1.png"])
    t = r.depth
    fig, ax, mesh = heatmap_figure(t.cells["niah_single_1"], t.lengths, t.bins,
                                   "niah_single_1: m")
    assert mesh.get_array().shape == (t.bins, len(t.lengths))  # bins x lengths cells
    fig.savefig(tmp_path / "probe.png", dpi=fig.dpi)  # pixels = the figure's display units
    png = mpimg.imread(tmp_path / "probe.png")[..., :3]
    cmap, norm = mesh.get_cmap(), mesh.norm
    for x, L in enumerate(t.lengths):
        for c in t.cells["niah_single_1"][L]:
            row, col = _cell_pixel(fig, ax, x, c.bin, png.shape[0])
            want = np.array(cmap(norm(c.score))[:3])
            assert np.abs(png[row, col] - want).max() < 0.03, (L, c.bin, png[row, col], want)
    plt.close(fig)
    # the file written by the report is the same picture
    saved = mpimg.imread(folder / "niah_single_1.png")[..., :3]
    assert saved.shape == png.shape and np.abs(saved - png).max() < 1e-6


def test_a_hatched_heatmap_says_why_in_a_legend(tmp_path):
    """Hatching means too few items; the all-niah map hatches a cell where any task has too few
    or none, whatever its own count (n = 4 can be hatched): the legend says which rule
    applies, and the markdown says it of the all-niah table (issue 30.15i)."""
    import matplotlib.pyplot as plt

    (tmp_path / "scores.json").write_text(json.dumps(_scores(ITEMS, depth_bins=4)))
    r = write_report(tmp_path, plots=False, min_depth_samples=2)
    t = r.depth
    legends = {}
    for name, cells, group in (("niah", t.niah, True),
                               ("niah_single_1", t.cells["niah_single_1"], False)):
        assert any(c.too_few for by_bin in cells.values() for c in by_bin)
        fig, _, _ = heatmap_figure(cells, t.lengths, t.bins, name, hatch_meaning(t, group))
        (legend,) = fig.legends
        legends[name] = " ".join(x.get_text() for x in legend.get_texts())
        assert legend.get_patches()[0].get_hatch() == "///"  # the cells' own hatching
        plt.close(fig)
    assert legends["niah_single_1"] == "hatched: fewer than 2 items in the cell (n = items)"
    assert legends["niah"].startswith("hatched: a task has fewer than 2 items in the cell, "
                                      "or none") and "each of the 2 tasks" in legends["niah"]
    one = write_report(tmp_path, plots=False, min_depth_samples=1).depth  # nothing hatched
    fig, _, _ = heatmap_figure(one.cells["niah_single_1"], one.lengths, one.bins, "none",
                               hatch_meaning(one, False))
    assert fig.legends == []
    plt.close(fig)
    write_report(tmp_path, plots=False, min_depth_samples=2)
    md = " ".join((tmp_path / "report.md").read_text().split())
    assert "in the all niah table, cells where a task has fewer than 2 items or none" in md


def test_report_cli_sets_bins_and_minimum(tmp_path, capsys):
    from ruler.commands.main import main

    (tmp_path / "scores.json").write_text(json.dumps(_scores(ITEMS, depth_bins=4)))
    assert main(["report", str(tmp_path), "--depth-bins", "2", "--min-depth-samples", "3",
                 "--no-plots"]) == 0
    depth = json.loads((tmp_path / "report.json").read_text())["depth"]
    assert depth["bins"] == 2 and depth["min_samples"] == 3
    assert [c["n"] for c in depth["tasks"]["niah_single_1"]["1024"]] == [3, 2]
    assert "| 0-50% | 66.7 (3) | 50.0 (2) † |" in capsys.readouterr().out
    assert main(["report", str(tmp_path), "--depth-bins", "0"]) == 2


def test_the_docs_show_a_small_committed_heatmap_labelled_synthetic():
    from helpers.paths import ROOT as root

    page = (root / "docs" / "reports-and-statistics.md").read_text()
    image = root / "docs" / "depth_heatmap_synthetic.png"
    assert "](depth_heatmap_synthetic.png)" in page and "synthetic predictions" in page
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size < 150_000
    assert "--depths 10" in page and "--tokenizer-config llama-3.1--depth10" in page
