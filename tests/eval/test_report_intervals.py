"""Per-row values and 95 % intervals in scores.json and in `ruler report` (issue 25).

A real tiny build (gpt-4 tokenizer), predictions written by hand so that one cell is binary
(niah_single_1: some rows right, some wrong) and one fractional (niah_multivalue: half of each
row's values given), and one row skipped. The numbers are checked against the metric and the
interval functions applied by hand, and the report's files against the scores.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from helpers.builds import build, rows
from ruler.commands.main import main
from ruler.eval.metrics.intervals import (
    method_text,
    score_interval,
    weighted_mean_interval,
)
from ruler.eval.metrics.specs import ROW_METRICS, postprocess_pred, score_of_rows
from ruler.eval.records.dataset import open_dataset
from ruler.eval.records.scores_record import ScoresRecord
from ruler.eval.report.run import build_report, to_csv, to_json, to_markdown, write_report
from ruler.eval.scoring.score import score_file, write_scores

pytestmark = [pytest.mark.build]

CONFIG = "gpt-4"
TASKS = ("niah_single_1", "niah_multivalue")
L = 4096
SAMPLES = 8


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, TASKS, (L,), samples=SAMPLES, workers=1)
    return out


def _answer(task: str, row: dict) -> str:
    outputs = list(row["outputs"])
    if task == "niah_single_1":  # rows 0..5 right, 6..7 wrong: binary
        return " ".join(outputs) if row["index"] < 6 else "no idea"
    # even rows half of the values, odd rows all: fractional
    return " ".join(outputs[: len(outputs) // 2] if row["index"] % 2 == 0 else outputs)


def _records(data: Path) -> list[dict]:
    records = []
    for t in TASKS:
        for r in rows(data, CONFIG, t, L):
            rec = {"tokenizer": CONFIG, "task": t, "max_seq_length": L, "index": r["index"],
                   "prediction": _answer(t, r)}
            if t == "niah_multivalue" and r["index"] == 3:
                rec.update(status="skipped", reason="prompt + tokens_to_generate > "
                                                    "max_model_len", prediction=None)
            records.append(rec)
    return records


@pytest.fixture(scope="module")
def scored(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("scored")
    path = folder / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(data)))
    report = score_file(path, open_dataset(str(data)))
    write_scores(folder / "scores.json", report)
    return report, folder


def test_each_cell_records_its_rows_values_and_interval(data, scored):
    report, folder = scored
    cells = {c.task: c for c in report.cells}
    for t in TASKS:
        c = cells[t]
        by_index = {r["index"]: r for r in rows(data, CONFIG, t, L)}
        answered = [i for i in range(SAMPLES) if not (t == "niah_multivalue" and i == 3)]
        expected = [ROW_METRICS[c.metric](postprocess_pred(_answer(t, by_index[i])),
                                          list(by_index[i]["outputs"])) for i in answered]
        assert c.row_scores == [[i, v] for i, v in zip(answered, expected)]
        # The score stays upstream's aggregate; the rows reproduce it to the last bit.
        assert score_of_rows([v for _, v in c.row_scores]) == c.score
        assert c.ci95 == score_interval(expected, key=f"{CONFIG}/{t}/{L}").to_json()
    assert cells["niah_single_1"].score == 75.0 and cells["niah_single_1"].ci_method == "wilson"
    assert cells["niah_multivalue"].score == round(5 / 7 * 100, 2)  # row 3 skipped
    assert cells["niah_multivalue"].ci_method == "bootstrap"
    low, high = cells["niah_multivalue"].ci95
    assert low < 5 / 7 * 100 < high
    saved = json.loads((folder / "scores.json").read_text())["cells"]
    assert [c["row_scores"] for c in saved] == [cells[t].row_scores for t in TASKS]
    assert [c["ci95"] for c in saved] == [cells[t].ci95 for t in TASKS]


def test_scoring_twice_gives_the_same_intervals(data, scored):
    report, folder = scored
    again = score_file(folder / "p.jsonl", open_dataset(str(data)))
    assert [c.ci95 for c in again.cells] == [c.ci95 for c in report.cells]


def _scores(folder: Path) -> dict:
    return json.loads((folder / "scores.json").read_text())


def test_the_report_gives_every_score_its_interval_and_the_means_a_bootstrap_over_rows(
        scored, tmp_path):
    report, folder = scored
    rows_of = {c.task: [v for _, v in c.row_scores] for c in report.cells}
    r = write_report(folder, tmp_path, threshold=95.0)  # well above the interval: certain
    assert r.complete
    cells = {c.task: c for c in report.cells}
    mean = weighted_mean_interval([rows_of[t] for t in TASKS], [1, 1], key=f"{CONFIG}/mean/{L}")
    # one length: Avg. and both wAvg. are its mean, and have its interval (issue 40 #23: they
    # had three, from three seeds)
    avg = mean
    assert r.intervals.by_length[L] == mean
    assert r.intervals.avg == r.intervals.wavg_inc == r.intervals.wavg_dec == mean
    assert r.intervals.wavg_inc.method == r.intervals.wavg_dec.method == "bootstrap"
    assert mean.low < r.summary.by_length[L] < mean.high

    md = (tmp_path / "report.md").read_text()
    for t, flag in zip(TASKS, ("", "*")):  # * : a row skipped
        lo, hi = cells[t].ci95
        assert f"| {t} | {cells[t].score:.2f}{flag} [{lo:.1f}, {hi:.1f}] |" in md
    assert (f"| **Mean (2 tasks)** | **{r.summary.by_length[L]:.2f}** [{mean.low:.1f}, "
            f"{mean.high:.1f}] |") in md
    assert f"| 95 % interval | [{mean.low:.1f}, {mean.high:.1f}] | [{avg.low:.1f}, " in md
    assert mean.high < 95.0 and method_text(True) in md and "‡" not in md

    table = list(csv.DictReader(io.StringIO((tmp_path / "report.csv").read_text())))
    by_task = {row["task"]: row for row in table}
    assert [float(by_task["niah_single_1"][k]) for k in ("ci_low", "ci_high")] == \
        cells["niah_single_1"].ci95
    assert [float(by_task["Mean (2 tasks)"][k]) for k in ("ci_low", "ci_high")] == \
        mean.to_json()

    data = json.loads((tmp_path / "report.json").read_text())
    assert data["intervals"]["scores"]["niah_multivalue"][str(L)] == cells["niah_multivalue"].ci95
    assert data["intervals"]["mean_by_length"] == {str(L): mean.to_json()}
    assert data["intervals"]["avg"] == avg.to_json()
    assert data["intervals"]["uncertain_lengths"] == [] and data["intervals"]["method"]
    assert all("row_scores" not in c for c in data["cells"])  # they stay in scores.json
    for name in ("scores_by_task.png", "scores_overall.png"):
        assert (tmp_path / name).stat().st_size > 0
    # deterministic: the same bytes the second time
    write_report(folder, tmp_path / "again", threshold=95.0)
    assert (tmp_path / "again" / "report.md").read_text() == md


def test_a_length_whose_interval_contains_the_threshold_is_marked_uncertain(scored):
    _, folder = scored
    scores = ScoresRecord.from_json(_scores(folder))
    threshold = build_report(scores).summary.by_length[L] - 1  # passes, barely
    r = build_report(scores, threshold=threshold)
    assert r.intervals.uncertain == [L] and r.summary.effective_length == L
    md = to_markdown(r)
    assert "] ‡ |" in md
    assert f"‡ Uncertain at 4K: the interval contains the threshold {threshold}" in md
    assert to_json(r)["intervals"]["uncertain_lengths"] == [L]


def test_older_scores_without_rows_still_load_and_show_no_intervals(scored):
    _, folder = scored
    old = _scores(folder)
    for c in old["cells"]:
        for k in ("row_scores", "ci95", "ci_method"):
            del c[k]
    r = build_report(ScoresRecord.from_json(old))
    assert r.intervals is None and r.summary.avg is not None
    md = to_markdown(r)
    assert "95 % interval" not in md and "Uncertainty" not in md
    assert "| niah_single_1 | 75.00 |" in md
    assert f"| **Mean (2 tasks)** | **{r.summary.by_length[L]:.2f}** |" in md
    assert to_json(r)["intervals"] is None
    assert {row["ci_low"] for row in csv.DictReader(io.StringIO(to_csv(r)))} == {""}


def test_a_partial_selection_has_cell_intervals_but_no_headline_ones(scored):
    _, folder = scored
    partial = _scores(folder)
    cell = partial["cells"][0]
    cell.update(missing=1, scored=cell["scored"] - 1, row_scores=cell["row_scores"][1:])
    r = build_report(ScoresRecord.from_json(partial), threshold=50.0)
    assert not r.complete and r.intervals.by_length == {L: None}
    assert r.intervals.avg is None and r.intervals.uncertain == []
    assert ("niah_single_1", L) in r.intervals.cells
    md = to_markdown(r)
    assert "| 95 % interval |" not in md and "‡" not in md


def test_report_cli_shows_the_intervals(scored, tmp_path, capsys):
    _, folder = scored
    assert main(["report", str(folder), "--out", str(tmp_path), "--no-plots"]) == 0
    assert "| 95 % interval | [" in capsys.readouterr().out


def test_one_statistic_has_one_interval_at_one_length_and_distinct_ones_at_several():
    """Issue 40 #23: at one length the mean, Avg. and both wAvg. are one number and were given
    three different intervals ([51.3, 79.5], [51.3, 82.1], [48.7, 82.1]). Over several
    lengths they are four numbers with the intervals they had before."""
    from helpers.scores import alternating, scores

    one = build_report(scores("m", "qwen2.5", TASKS, (4096,), alternating, rows=7))
    ri = one.intervals
    assert ri.by_length[4096] == ri.avg == ri.wavg_inc == ri.wavg_dec
    assert ri.avg.low < one.summary.avg < ri.avg.high
    line = next(x for x in to_markdown(one).splitlines() if x.startswith("| 95 % interval |"))
    assert len({x.rstrip(" ‡") for x in line.strip("| ").split(" | ")[1:]}) == 1
    two = build_report(scores("m", "qwen2.5", TASKS, (4096, 8192), alternating, rows=7))
    ri = two.intervals
    stacked = [c.values for L in (4096, 8192) for c in two.cells.values()
               if c.max_seq_length == L]
    assert ri.avg == weighted_mean_interval(stacked, [0.25] * 4, key="qwen2.5/avg")
    assert ri.wavg_inc == weighted_mean_interval(stacked, [1 / 6, 1 / 6, 1 / 3, 1 / 3],
                                                 key="qwen2.5/inc")
    assert len({ri.avg, ri.wavg_inc, ri.wavg_dec, ri.by_length[4096]}) == 4
