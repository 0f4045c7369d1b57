"""Report math (weights, means, effective length) against published numbers, and the report
files written from a scores.json.

Fixture source: the main results table of the RULER README (NVIDIA/RULER, read from the mirror
hsiehjackson/RULER README.md at commit 0193bdd0 in the search corpus). Its 4K..128K columns,
Avg., wAvg. (inc), wAvg. (dec) and effective lengths are the paper's Table 3 columns for the
same models (arXiv:2404.06654; the README adds newer models). The threshold 85.6 is
Llama-2-7B-chat at 4K from the same table. Published values are rounded to one decimal, so
computed averages are compared at that precision.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from ruler.benchmarks.ruler.tasks import PAPER_LENGTH_WEIGHTS_INC
from ruler.benchmarks.ruler.tasks import TASKS as STANDARD_TASKS
from ruler.catalog.tasks import PAPER_LENGTHS, TASKS
from ruler.eval.metrics.aggregate import (
    DEFAULT_THRESHOLD,
    effective_length,
    format_effective,
    format_length,
    length_weights,
    summarize,
    weighted_average,
)
from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
from ruler.eval.report.run import (
    build_report,
    check_revision,
    to_csv,
    to_json,
    to_markdown,
    write_report,
)
from ruler.kernel.errors import RulerError

# model: (4K, 8K, 16K, 32K, 64K, 128K), Avg., wAvg. (inc), wAvg. (dec), effective length
README_TABLE = {
    "GPT-4-1106-preview": ((96.6, 96.3, 95.2, 93.2, 87.0, 81.2), 91.6, 89.0, 94.1, "64K"),
    "Llama3.1 (8B)": ((95.5, 93.8, 91.6, 87.4, 84.7, 77.0), 88.3, 85.4, 91.3, "32K"),
    "Llama3.1 (70B)": ((96.5, 95.8, 95.4, 94.8, 88.4, 66.6), 89.6, 85.5, 93.7, "64K"),
    "Mistral-Nemo": ((87.8, 87.2, 87.7, 69.0, 46.8, 19.0), 66.2, 54.7, 77.8, "16K"),
    "InternLM2.5 (7B)": ((88.1, 85.5, 84.5, 82.7, 75.5, 68.9), 80.9, 77.8, 83.9, "4K"),
    "LWM (7B)": ((82.3, 78.4, 73.7, 69.1, 68.1, 65.0), 72.8, 69.9, 75.7, "< 4K"),
    "Jamba-1.5-large": ((96.7, 96.6, 96.4, 96.0, 95.4, 95.1), 96.0, 95.7, 96.3, "128K"),
}


def test_weights_are_k_over_21_on_the_paper_lengths():
    inc = length_weights(PAPER_LENGTHS, increasing=True)
    dec = length_weights(PAPER_LENGTHS, increasing=False)
    assert [inc[L] for L in PAPER_LENGTHS] == pytest.approx(PAPER_LENGTH_WEIGHTS_INC)
    assert [round(inc[L], 3) for L in PAPER_LENGTHS] == [0.048, 0.095, 0.143, 0.190, 0.238,
                                                          0.286]  # issue NVIDIA/RULER#82
    assert [dec[L] for L in PAPER_LENGTHS] == pytest.approx(PAPER_LENGTH_WEIGHTS_INC[::-1])
    assert sum(inc.values()) == pytest.approx(1.0) == sum(dec.values())
    assert length_weights([1024, 2048]) == {1024: 1 / 3, 2048: 2 / 3}


@pytest.mark.parametrize("model", README_TABLE)
def test_readme_rows_give_the_published_averages_and_effective_length(model):
    scores, avg, inc, dec, eff = README_TABLE[model]
    s = summarize(dict(zip(PAPER_LENGTHS, scores)))
    assert round(s.avg, 1) == avg
    assert round(s.wavg_inc, 1) == inc
    assert round(s.wavg_dec, 1) == dec
    assert s.effective_label == eff
    assert s.threshold == DEFAULT_THRESHOLD == 85.6


def test_effective_length_needs_every_shorter_length_to_pass():
    # Passes at 4K and 16K but not 8K: the effective length is 4K, not 16K.
    assert effective_length({4096: 90, 8192: 80, 16384: 90}) == 4096
    # "exceeds": equal to the threshold is not enough.
    assert effective_length({4096: 85.6, 8192: 99}) is None
    assert effective_length({4096: 85.61}) == 4096
    # A length without a score ends the run.
    assert effective_length({4096: 99, 8192: None, 16384: 99}) == 4096
    assert effective_length({4096: 99, 8192: 95}, threshold=96) == 4096
    assert format_effective(None, [2048, 4096]) == "< 2K"


def test_format_length():
    assert [format_length(L) for L in PAPER_LENGTHS] == ["4K", "8K", "16K", "32K", "64K", "128K"]
    assert format_length(1000) == "1000" and format_length(1 << 20) == "1M"


def test_weighted_average_of_a_constant_is_the_constant():
    assert weighted_average({1: 50.0, 2: 50.0, 3: 50.0}, True) == pytest.approx(50.0)


def _scores(cells: dict[tuple[str, int], float | None], extra: dict | None = None) -> dict:
    extra = extra or {}
    def cell(task, L, score):
        base = dict(task=task, max_seq_length=L, metric=TASKS[task].metric, score=score,
                    rows=10, scored=0 if score is None else 10, nulls=0,
                    skipped=10 if score is None else 0, errors=0, missing=0,
                    data_sha256=f"sha-{task}-{L}", skip_reasons=[])
        base.update(extra.get((task, L), {}))
        return base
    return {"format": SCORES_FORMAT, "config": "llama-3.1", "model": "m",
            "dataset": {"spec": "ruler", "revision": None,
                        "files": {f"{t}/{L}": f"sha-{t}-{L}" for t, L in cells}},
            "cells": [cell(t, L, s) for (t, L), s in cells.items()], "missing": [],
            "unknown": []}


def test_report_means_per_length_over_the_13_tasks():
    # Every task scores the README's GPT-4 per-length mean + a task-dependent offset that
    # cancels over the 13 tasks, so the 13-task means are the published row.
    gpt4 = README_TABLE["GPT-4-1106-preview"][0]
    offsets = [k - 6 for k in range(13)]  # -6..6, sum 0
    cells = {(t, L): s + off for L, s in zip(PAPER_LENGTHS, gpt4)
             for t, off in zip(STANDARD_TASKS, offsets)}
    r = build_report(ScoresRecord.from_json(_scores(cells)))
    assert r.mean_label == "Mean (13 tasks)"
    assert [r.summary.by_length[L] for L in PAPER_LENGTHS] == pytest.approx(gpt4)
    assert round(r.summary.avg, 1) == 91.6 and r.summary.effective_label == "64K"
    md = to_markdown(r)
    assert "| 64K | <ins>96.6</ins> |" in md and "| 81.2 | 91.6 | 89.0 | 94.1 |" in md
    data = to_json(r)
    assert data["effective_length"] == 65536 and data["effective_length_label"] == "64K"
    assert data["tasks"] == list(STANDARD_TASKS)
    rows = list(csv.DictReader(io.StringIO(to_csv(r))))
    assert len(rows) == 13 * 6 + 6 and rows[-1]["task"] == "Mean (13 tasks)"


def test_report_marks_skipped_cells_and_refuses_averages_over_missing_lengths():
    cells = {("niah_single_1", 4096): 100.0, ("niah_single_1", 8192): None,
             ("qa_1", 4096): 80.0, ("qa_1", 8192): 70.0}
    reasons = {("niah_single_1", 8192): {"skip_reasons": ["10x prompt + tokens_to_generate > "
                                                          "max_model_len"]}}
    r = build_report(ScoresRecord.from_json(_scores(cells, reasons)))
    assert r.summary.by_length == {4096: 90.0, 8192: None}
    assert r.summary.avg is None and r.summary.wavg_inc is None
    assert r.summary.effective_length == 4096
    md = to_markdown(r)
    assert "n/a*" in md and "max_model_len" in md and "Mean (2 tasks)" in md
    assert "| niah_single_1 | 10/0/0/0/0 | 0/0/10/0/0 |" in md


def test_write_report_files_and_revision_check(tmp_path):
    cells = {(t, L): 90.0 for t in ("niah_single_1", "qa_2") for L in (4096, 8192)}
    (tmp_path / "scores.json").write_text(json.dumps(_scores(cells)))
    r = write_report(tmp_path, plots=True)
    for name in ("report.md", "report.csv", "report.json", "scores_by_task.png",
                 "scores_overall.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / "scores_overall.png").read_bytes()[:4] == b"\x89PNG"
    assert r.summary.effective_label == "8K"
    same = {f"{t}/{L}": f"sha-{t}-{L}" for t, L in cells}
    check_revision(ScoresRecord.from_json(_scores(cells)), same, "results")
    with pytest.raises(RulerError, match="different revision"):
        write_report(tmp_path, dataset_files=dict(same, **{"qa_2/8192": "other"}))


def test_report_rejects_a_file_that_is_not_scores(tmp_path):
    (tmp_path / "scores.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(RulerError, match="not a ruler scores file"):
        write_report(tmp_path)
    with pytest.raises(RulerError, match="not found"):
        write_report(tmp_path / "nowhere")


@pytest.mark.parametrize("gap", [{"missing": 4, "scored": 6}, {"errors": 4, "scored": 6}])
def test_missing_or_failed_rows_make_the_report_partial(tmp_path, gap):
    """Rows without a result (missing, or a failed request) leave the headline out and name the
    cell; rows skipped as too long are a result of the run's settings and do not."""
    cells = {(t, L): 90.0 for t in ("niah_single_1", "qa_2") for L in (4096, 8192)}
    skipped = {"skipped": 3, "scored": 7, "skip_reasons": ["3x prompt + tokens_to_generate > "
                                                           "max_model_len"]}
    scores = _scores(cells, {("qa_2", 8192): gap, ("qa_2", 4096): skipped})
    r = build_report(ScoresRecord.from_json(scores))
    assert (r.summary.avg, r.summary.wavg_inc, r.summary.effective_length) == (None, None, None)
    assert r.summary.by_length == {4096: 90.0, 8192: None}  # 8K has the gap
    assert r.summary.effective_label == "n/a (partial)"
    assert not r.complete and r.incomplete == [("qa_2", 8192)]
    md = to_markdown(r)
    assert "**Partial results**: 36 of 40 rows asked for have a result" in md
    assert "Incomplete cells (rows with a result / rows asked for): qa_2 @ 8K (6/10)." in md
    # 4K's mean rests on fewer rows than asked for (3 skipped): marked in the headline
    assert "| n/a (partial) | <ins>90.0</ins>* | n/a | n/a | n/a | n/a |" in md
    assert "| qa_2 | 10/10 | 6/10 |" in md  # coverage: skipped rows have their result
    data = to_json(r)
    assert (data["complete"], data["incomplete_cells"], data["avg"]) == (False, ["qa_2/8192"],
                                                                         None)
    assert data["coverage"] == {"niah_single_1": {"4096": "10/10", "8192": "10/10"},
                                "qa_2": {"4096": "10/10", "8192": "6/10"}}
    assert r.status_line().startswith("PARTIAL: 36 of 40 rows asked for have a result; "
                                      "incomplete cells: qa_2 @ 8K (6/10)")
    # Complete: the headline is there, and says so.
    full = build_report(ScoresRecord.from_json(_scores({k: 90.0 for k in cells})))
    assert full.complete and full.summary.avg == 90.0 and full.summary.effective_label == "8K"
    assert "Partial" not in to_markdown(full)
    assert full.status_line() == "complete: 40 of 40 rows asked for have a result (2 task(s) " \
                                 "x 2 length(s))"
    assert to_json(full)["complete"] is True
