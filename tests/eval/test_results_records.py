"""run.json and scores.json are read and written only as their records (`eval.records.run_record`,
`eval.records.scores_record`): a results folder's files read back to the same bytes; a file of an
older
ruler (fields missing: "not recorded") or a newer one (fields this version does not know) is
written back as it was read; a skipped row's kind is what the runner recorded, whatever its
reason text says (`eval.records.skip_reasons`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ruler.commands.main import main
from ruler.eval.records.dataset import open_dataset
from ruler.eval.records.results_schema import read_run, read_scores
from ruler.eval.records.run_record import RunRecord
from ruler.eval.records.scores_record import CellScore, ScoresRecord
from ruler.eval.records.skip_reasons import SkipReason, skip_kind
from ruler.eval.scoring.score import score_file, score_folder
from ruler.kernel.atomic import write_json_atomic

CONFIG = "qwen2.5"


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: niah_single_1, vt x 1024 x 4 samples (read only)


@pytest.fixture(scope="module")
def pristine(data, tmp_path_factory) -> Path:
    """A finished `ruler eval` results folder (fake backend: gold answers)."""
    out = tmp_path_factory.mktemp("records") / "run"
    assert main(["eval", "--backend", "fake", "--model", "m", "--model-tokenizer", CONFIG,
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
                 "--render-workers", "0"]) == 0
    return out


@pytest.fixture
def results(pristine, tmp_path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "run"))


def _written(path: Path, data) -> bytes:
    write_json_atomic(path, data)
    return path.read_bytes()


@pytest.mark.build
def test_a_results_folder_reads_back_to_the_same_bytes(pristine, tmp_path):
    run, scores = read_run(pristine / "run.json"), read_scores(pristine / "scores.json")
    assert isinstance(run, RunRecord) and isinstance(scores, ScoresRecord)
    assert all(isinstance(c, CellScore) for c in scores.cells)
    assert run.config == CONFIG and run.dataset.files == scores.dataset.files
    assert _written(tmp_path / "run.json", run.to_json()) == (pristine / "run.json").read_bytes()
    assert _written(tmp_path / "scores.json", scores.to_json()) == \
        (pristine / "scores.json").read_bytes()


@pytest.mark.build
def test_scoring_the_same_run_again_writes_the_same_scores(pristine, results, data):
    """The same predictions scored again: the same bytes (the copy's own path aside)."""
    ds = open_dataset(str(data))
    score_folder(results, ds)
    again = (results / "scores.json").read_bytes()
    score_folder(results, ds)
    assert (results / "scores.json").read_bytes() == again
    assert again.replace(str(results).encode(), str(pristine).encode()) == \
        (pristine / "scores.json").read_bytes()


@pytest.mark.build
def test_older_and_newer_files_are_written_back_as_they_were_read(pristine, tmp_path):
    """An older ruler's files lack fields (each then reads as "not recorded"); a newer one's
    have fields this version does not know (kept, also inside nested records)."""
    scores = json.loads((pristine / "scores.json").read_text())
    for name in ("health", "variant", "prompt_check", "selection", "tied_to_build"):
        scores.pop(name, None)
    for cell in scores["cells"]:
        for name in ("row_scores", "tied_by", "unverified", "budget_clamped", "ci95"):
            cell.pop(name, None)
    scores["future"] = {"x": 1}
    scores["cells"][0]["future_cell"] = [1, 2]
    scores["dataset"]["future_dataset"] = "kept"
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    record = read_scores(tmp_path / "scores.json")
    assert record.health is None and record.variant is None and record.selection is None
    assert record.cells[0].row_scores is None and record.cells[0].unverified is None
    assert not record.ties_recorded
    assert record.to_json() == scores

    run = json.loads((pristine / "run.json").read_text())
    for name in ("prompt_template", "max_tokens", "backends", "max_model_len", "last_run"):
        run.pop(name, None)
    run["future"] = True
    (tmp_path / "run.json").write_text(json.dumps(run))
    record = read_run(tmp_path / "run.json")
    assert record.prompt_template is None and record.max_model_len is None
    assert record.to_json() == run


@pytest.mark.build
def test_a_skipped_row_is_counted_by_the_kind_the_run_recorded(results, data):
    """Scores and the health section read the kind (`skip_kind`), not the reason's words: a
    reason worded otherwise is still a row skipped for the context limit. A record of an
    older run, with no kind, is read by its reason as before."""
    path = results / "predictions.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first, second = records[0], records[1]
    assert first["task"] == second["task"]
    first.update(status="skipped", prediction=None, skip_kind=SkipReason.OVER_CONTEXT.value,
                 reason="does not fit the engine's context")
    second.update(status="skipped", prediction=None,
                  reason="prompt 900 + tokens_to_generate 128 = 1028 > max_model_len 1000")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert skip_kind(first) is SkipReason.OVER_CONTEXT
    assert skip_kind(second) is SkipReason.OVER_CONTEXT  # an older record: by its text

    report = score_file(path, open_dataset(str(data)))
    cell = next(c for c in report.cells if c.task == first["task"])
    assert cell.skipped == 2
    assert cell.skip_reasons == ["2x prompt + tokens_to_generate > max_model_len"]
    assert report.health is not None
    assert report.health.skipped_context == {first["task"]: 2}


@pytest.mark.build
def test_the_runner_records_the_kind_of_a_skip(data, tmp_path):
    """`ruler eval` with a context below the rows' length skips them, recording the kind."""
    out = tmp_path / "short"
    assert main(["eval", "--backend", "fake", "--model", "m", "--model-tokenizer", CONFIG,
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
                 "--render-workers", "0", "--max-model-len", "512",
                 "--tasks", "niah_single_1"]) == 0
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "skipped" for r in records)
    assert {r["skip_kind"] for r in records} == {SkipReason.OVER_CONTEXT.value}
    assert all("max_model_len 512" in r["reason"] for r in records)
