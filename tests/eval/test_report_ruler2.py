"""`ruler report` and `ruler compare` on RULERv2 scores: the plain mean of the 12 tasks per
length and its average (NeMo-Skills' `ruler2_score`), no weighted averages or effective
length, the family x difficulty table with intervals; scores mixing benchmarks refused.

The scores are hand-made: each task has four rows whose values (0..1) give its score.
"""

from __future__ import annotations

import json

import pytest

from ruler.benchmarks.ruler2.report import family_difficulty
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.eval.metrics.intervals import score_interval
from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
from ruler.eval.report.compare import compare_scores
from ruler.eval.report.run import build_report, to_csv, to_json, to_markdown, write_report
from ruler.kernel.errors import RulerError

LENGTHS = (8192, 32768)
METRICS = {"mk_niah_medium": "multichoice", "mk_niah_hard": "multichoice",
           "mv_niah_medium": "ruler2_2steps", "qa_basic": "ruler2_part", "qa_easy": "ruler2_part",
           "qa_medium": "ruler2_part", "qa_hard": "ruler2_part"}


def _rows(task: str, L: int) -> list[float]:
    """Four row values: task k (0..11) at 8K scores 100 - 5k, at 32K 25 points less (never
    below 0), from rows of 0, 0.5 and 1."""
    k = RULER2_TASKS.index(task)
    target = max(0, 100 - 5 * k - (25 if L == 32768 else 0))
    # four rows in steps of 12.5 points: round the target down to a multiple of 12.5
    halves = int(target // 12.5)
    return [1.0] * (halves // 2) + [0.5] * (halves % 2) + [0.0] * (4 - halves // 2 - halves % 2)


def _cell(task: str, L: int, values: list[float]) -> dict:
    ci = score_interval(values, key=f"c/{task}/{L}")
    return dict(task=task, max_seq_length=L, metric=METRICS.get(task, "ruler2_all"),
                score=100.0 * sum(values) / len(values), rows=4, scored=4, nulls=0, skipped=0,
                errors=0, missing=0, data_sha256=f"sha-{task}-{L}", skip_reasons=[],
                row_scores=[[i, v] for i, v in enumerate(values)], ci95=ci.to_json(),
                ci_method=ci.method)


def _scores(tasks=RULER2_TASKS, rows=_rows) -> dict:
    cells = [_cell(t, L, rows(t, L)) for L in LENGTHS for t in tasks]
    return {"format": SCORES_FORMAT, "config": "llama-3.1--v2", "model": "m",
            "dataset": {"spec": "d", "revision": None,
                        "files": {f"{c['task']}/{c['max_seq_length']}": c["data_sha256"]
                                  for c in cells}},
            "cells": cells, "missing": [], "unknown": []}


def test_the_mean_per_length_is_the_plain_mean_of_the_12_tasks():
    r = build_report(ScoresRecord.from_json(_scores()))
    scores = {(t, L): 100.0 * sum(_rows(t, L)) / 4 for t in RULER2_TASKS for L in LENGTHS}
    # 8K: tasks 0..11 target 100, 95, ..., 45 -> rounded down to 12.5-point steps:
    # 100, 87.5, 87.5, 75, 75, 75, 62.5, 62.5, 50, 50, 50, 37.5 -> sum 812.5, mean 67.708...
    assert [scores[(t, 8192)] for t in RULER2_TASKS] == [100, 87.5, 87.5, 75, 75, 75, 62.5,
                                                          62.5, 50, 50, 50, 37.5]
    assert r.summary.by_length[8192] == pytest.approx(812.5 / 12)
    assert r.summary.by_length[32768] == pytest.approx(
        sum(scores[(t, 32768)] for t in RULER2_TASKS) / 12)
    assert r.summary.avg == pytest.approx((r.summary.by_length[8192]
                                           + r.summary.by_length[32768]) / 2)
    # RULERv2 has no weighted averages and no effective length.
    assert r.summary.wavg_inc is None and r.summary.wavg_dec is None
    assert r.summary.effective_length is None and r.summary.effective_label == "n/a"
    assert r.benchmark == "ruler2" and r.mean_label == "Mean (12 tasks)"
    # Intervals for the lengths and Avg., none for weighted averages or uncertain lengths.
    assert r.intervals.by_length[8192] is not None and r.intervals.avg is not None
    assert r.intervals.wavg_inc is None and r.intervals.uncertain == []


def test_markdown_has_the_ruler2_headline_and_the_family_difficulty_table():
    r = build_report(ScoresRecord.from_json(_scores()))
    md = to_markdown(r)
    assert md.startswith("# RULERv2 results: m")
    assert "| 8K | 32K | Avg. |" in md and "wAvg" not in md and "Effective length" not in md
    assert f"| {r.summary.by_length[8192]:.1f} | {r.summary.by_length[32768]:.1f} | " \
           f"{r.summary.avg:.1f} |" in md
    assert "## RULERv2: family x difficulty" in md and "### 8K" in md and "### 32K" in md
    # 8K, mk row: mk_niah_basic 100, easy 87.5, medium 87.5, hard 75 (rows 1,1,1,0 ->
    # Wilson [30.1, 95.4]); family mean (100 + 87.5 + 87.5 + 75) / 4 = 87.5.
    mk = next(line for line in md.splitlines() if line.startswith("| mk |"))
    assert mk.startswith("| mk | 100.00 [51.0, 100.0] | 87.50 [")
    assert "| 75.00 [30.1, 95.4] | 87.50 [" in mk
    # basic column mean over mk/mv/qa at 8K: (100 + 75 + 50) / 3 = 75.
    mean_row = [line for line in md.splitlines() if line.startswith("| **Mean** |")][0]
    assert mean_row.startswith("| **Mean** | 75.00 [")


def test_json_and_csv_carry_the_benchmark_and_the_grid():
    r = build_report(ScoresRecord.from_json(_scores()))
    data = json.loads(json.dumps(to_json(r)))
    assert data["benchmark"] == "ruler2" and data["wavg_inc"] is None
    g = data["family_difficulty"]["8192"]
    assert g["cells"]["qa"] == {"basic": 50.0, "easy": 50.0, "medium": 50.0, "hard": 37.5}
    assert g["family_mean"]["qa"] == pytest.approx(46.875)
    assert g["difficulty_mean"]["hard"] == pytest.approx((75 + 62.5 + 37.5) / 3)
    assert g["intervals"]["cells"]["mk"]["hard"] == [30.06, 95.44]
    low, high = g["intervals"]["family_mean"]["qa"]
    assert low < 46.875 < high
    assert to_csv(r).splitlines()[-1].startswith("Mean (12 tasks),32768,mean,")


def test_a_task_missing_from_a_family_leaves_its_mean_out():
    r = build_report(ScoresRecord.from_json(_scores(tasks=RULER2_TASKS[:-1])))  # no qa_hard
    g = to_json(r)["family_difficulty"]["8192"]
    assert g["cells"]["qa"]["hard"] is None and g["family_mean"]["qa"] is None
    assert g["difficulty_mean"]["hard"] is None and g["family_mean"]["mk"] == 87.5
    assert "| qa | 50.00 [" in to_markdown(r) and "| — | — |" in to_markdown(r)


def test_scores_mixing_ruler_and_ruler2_tasks_are_refused():
    scores = _scores()
    v1 = dict(scores["cells"][0], task="niah_single_1", metric="string_match_all")
    scores["cells"].append(v1)
    with pytest.raises(RulerError, match="mix the tasks of several benchmarks"):
        build_report(ScoresRecord.from_json(scores))


def test_write_report_writes_every_file(tmp_path):
    (tmp_path / "scores.json").write_text(json.dumps(_scores()))
    write_report(tmp_path)
    assert "RULERv2" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "scores_overall.png").stat().st_size > 0


def test_compare_works_on_ruler2_runs():
    a = _scores()
    b = _scores(rows=lambda t, L: [0.0] * 4)
    c = compare_scores(ScoresRecord.from_json(a), ScoresRecord.from_json(b), "A", "B")
    assert len(c.by_task) == 24 and len(c.overall) == 2
    first = c.by_task[0]
    assert (first.task, first.length, first.a, first.b) == ("mk_niah_basic", 8192, 100.0, 0.0)
    # Rows with 0.5 are not binary: those cells use the paired bootstrap, not McNemar.
    easy = next(row for row in c.by_task if (row.task, row.length) == ("mk_niah_easy", 8192))
    assert easy.diff.test == "paired bootstrap" and first.diff.test == "mcnemar"
    assert c.overall[0].diff.difference == pytest.approx(812.5 / 12)


def test_family_difficulty_of_task_names():
    assert [family_difficulty(t) for t in RULER2_TASKS[:5]] == [
        ("mk", "basic"), ("mk", "easy"), ("mk", "medium"), ("mk", "hard"), ("mv", "basic")]
    assert family_difficulty("qa_1") is None and family_difficulty("niah_single_1") is None
