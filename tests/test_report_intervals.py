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

from build_helpers import build, rows
from ruler.cli import main
from ruler.eval.data import open_dataset
from ruler.eval.intervals import METHOD_TEXT, score_interval, weighted_mean_interval
from ruler.eval.metrics import ROW_METRICS, postprocess_pred, score_of_rows
from ruler.eval.report import build_report, to_csv, to_json, to_markdown, write_report
from ruler.eval.score import score_file, write_scores

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
    return " ".join(outputs[: len(outputs) // 2])  # half of the values: fractional


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
    assert cells["niah_multivalue"].score == 50.0
    assert cells["niah_multivalue"].ci_method == "bootstrap"
    low, high = cells["niah_multivalue"].ci95
    assert low <= 50.0 <= high
    saved = json.loads((folder / "scores.json").read_text())["cells"]
    assert [c["row_scores"] for c in saved] == [cells[t].row_scores for t in TASKS]
    assert [c["ci95"] for c in saved] == [cells[t].ci95 for t in TASKS]


def test_scoring_twice_gives_the_same_intervals(data, scored):
    report, folder = scored
    again = score_file(folder / "p.jsonl", open_dataset(str(data)))
    assert [c.ci95 for c in again.cells] == [c.ci95 for c in report.cells]
