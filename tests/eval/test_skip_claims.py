"""A foreign predictions file that marks rows skipped ("too long"): what is scored says how many
rows it rests on ("N scored" of the rows with a result), the headline numbers carry the mark,
and a claim the predictions themselves contradict (the model answered a row at least as long)
is not a skip: that row has no result, and the numbers are partial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.builds import rows
from ruler.commands.main import main
from ruler.eval.records.dataset import open_dataset
from ruler.eval.report.run import build_report, headline_markdown
from ruler.eval.scoring.score import score_file

pytestmark = [pytest.mark.build]

CONFIG, TASKS, L = "qwen2.5", ("niah_single_1", "vt"), 1024


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # conftest: read only


def _predictions(data: Path, tmp_path: Path, skip) -> Path:
    """Gold answers for every row but those `skip(row)` picks, marked skipped "too long"."""
    lines = []
    for task in TASKS:
        for r in rows(data, CONFIG, task, L):
            rec = {k: r[k] for k in ("tokenizer", "task", "max_seq_length", "index")}
            if skip(r):
                rec.update(prediction=None, status="skipped", reason="too long")
            else:
                rec["prediction"] = " ".join(r["outputs"])
            lines.append(json.dumps(rec))
    path = tmp_path / "foreign.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _lengths(data: Path) -> list[tuple[int, str, int]]:
    return sorted((r["length"], t, r["index"]) for t in TASKS for r in rows(data, CONFIG, t, L))


def test_a_skip_the_predictions_contradict_is_a_row_without_a_result(data, tmp_path, capsys):
    # the shortest row "too long", while every longer one was answered
    _, task, index = _lengths(data)[0]
    path = _predictions(data, tmp_path, lambda r: (r["task"], r["index"]) == (task, index))
    scores = score_file(path, open_dataset(str(data)))
    cell = next(c for c in scores.cells if c.task == task)
    assert (cell.skipped, cell.errors, cell.scored) == (0, 1, 3)
    reason, = cell.skip_reasons
    assert "said skipped (too long), but it is no longer than a row the model answered" \
        in reason
    assert not scores.complete
    assert main(["score", "--predictions", str(path), "--data", str(data), "--no-plots",
                 "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "PARTIAL: 7 of 8 rows asked for have a result" in out and "complete:" not in out


def test_a_skip_that_holds_is_counted_and_marked_in_the_headline(data, tmp_path, capsys):
    longest, task, index = _lengths(data)[-1]
    path = _predictions(data, tmp_path, lambda r: (r["task"], r["index"]) == (task, index))
    scores = score_file(path, open_dataset(str(data)))
    cell = next(c for c in scores.cells if c.task == task)
    assert (cell.skipped, cell.errors, cell.scored) == (1, 0, 3)
    r = build_report(scores)
    assert r.complete
    assert r.status_line().startswith(
        "complete: 8 of 8 rows asked for have a result: 7 scored, 1 skipped as too long for "
        "the model")
    head = headline_markdown(r)
    assert "| 1K | <ins>100.0</ins>* | 100.0* | 100.0* | 100.0* |" in head
    assert "Scored on fewer rows than asked for" in head and "1K: 7 of 8 rows scored" in head
