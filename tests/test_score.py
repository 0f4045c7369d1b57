"""`ruler score` and the evaluator's bookkeeping on a real build (no inference stack needed).

Predictions are written by hand, as another framework would, or come from a stand-in backend
that answers with the gold values (the real engines are exercised in test_eval_vllm.py).
Covers: perfect and partial scores, missing and unknown rows, missing columns, duplicate keys,
a results folder from another dataset revision, the tokenizer-count check, resume.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from build_helpers import build, rows
from ruler.cli import main
from ruler.builder.errors import RulerError
from ruler.eval.backends import GenResult
from ruler.eval.data import open_dataset
from ruler.eval.runner import EvalConfig, run_eval
from ruler.eval.score import score_file

TASKS = ("niah_single_1", "niah_multikey_2")
CONFIG = "qwen2.5"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, TASKS, (1024,), samples=3, workers=1)
    return out


def _records(data: Path, answer=lambda row: " ".join(row["outputs"])) -> list[dict]:
    return [{"tokenizer": CONFIG, "task": t, "max_seq_length": 1024, "index": r["index"],
             "prediction": answer(r)} for t in TASKS for r in rows(data, CONFIG, t, 1024)]


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_gold_answers_score_100_and_wrong_ones_0(data, tmp_path):
    ds = open_dataset(str(data))
    report = score_file(_write_jsonl(tmp_path / "p.jsonl", _records(data)), ds)
    assert [(c.task, c.score, c.scored, c.missing) for c in report.cells] == [
        ("niah_single_1", 100.0, 3, 0), ("niah_multikey_2", 100.0, 3, 0)]
    assert report.missing == [] and report.unknown == []
    wrong = score_file(_write_jsonl(tmp_path / "w.jsonl", _records(data, lambda r: "\x00 ")), ds)
    assert [(c.score, c.nulls) for c in wrong.cells] == [(0.0, 3), (0.0, 3)]


def test_parquet_predictions_and_cli(data, tmp_path, capsys):
    recs = _records(data)
    recs[0]["prediction"] = "no idea"  # 1 of 3 wrong -> 66.67
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / "p.parquet")
    assert main(["score", "--predictions", str(tmp_path / "p.parquet"), "--data", str(data)]) == 0
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [66.67, 100.0]
    assert (tmp_path / "report.md").is_file() and "66.67" in capsys.readouterr().out


def test_a_damaged_predictions_file_is_one_clear_error(data, tmp_path, capsys):
    recs = _records(data)
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(recs), path)
    path.write_bytes(path.read_bytes()[:-40])  # truncated by a crash or a bad copy
    assert main(["score", "--predictions", str(path), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"predictions file {path} is not readable as Parquet" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "scores.json").exists()


def test_missing_and_unknown_rows_are_listed(data, tmp_path, capsys):
    recs = _records(data)
    dropped = recs.pop(1)
    recs.append(dict(recs[0], index=99))  # no such sample
    recs.append(dict(recs[0], task="niah_single_2"))  # no such file in the build
    path = _write_jsonl(tmp_path / "p.jsonl", recs)
    report = score_file(path, open_dataset(str(data)))
    assert report.missing == [f"{CONFIG}/{dropped['task']}/1024#{dropped['index']}"]
    assert report.unknown == [f"{CONFIG}/niah_single_1/1024#99", f"{CONFIG}/niah_single_2/1024#0"]
    cell = report.cells[0]
    assert (cell.score, cell.scored, cell.missing) == (100.0, 2, 1)  # scored on what exists
    assert main(["score", "--predictions", str(path), "--data", str(data), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "1 dataset rows without a prediction" in err and "match no dataset row" in err


def test_missing_columns_and_duplicate_keys_are_errors(data, tmp_path, capsys):
    recs = _records(data)
    bad = [{k: v for k, v in r.items() if k != "max_seq_length"} for r in recs]
    with pytest.raises(RulerError, match="lacks column.*max_seq_length"):
        score_file(_write_jsonl(tmp_path / "a.jsonl", bad), open_dataset(str(data)))
    with pytest.raises(RulerError, match="2 duplicate prediction key"):
        score_file(_write_jsonl(tmp_path / "b.jsonl", recs + recs[:2]), open_dataset(str(data)))
    # A failed request retried by a resumed run is not a duplicate.
    retried = [dict(recs[0], prediction=None, status="error", reason="timeout")] + recs
    assert score_file(_write_jsonl(tmp_path / "c.jsonl", retried),
                      open_dataset(str(data))).cells[0].score == 100.0
    (tmp_path / "d.jsonl").write_text("{not json}\n")
    assert main(["score", "--predictions", str(tmp_path / "d.jsonl"), "--data", str(data)]) == 2
    assert "d.jsonl:1: not a JSON object" in capsys.readouterr().err


@dataclass
class GoldBackend:
    """Stand-in engine: answers each prompt with the gold values (and counts calls)."""

    answers: dict
    name: str = "gold"
    max_model_len: int = 100_000
    calls: int = 0
    fail_after: int | None = None

    def generate(self, requests):
        for r in requests:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise KeyboardInterrupt  # an interrupted run
            self.calls += 1
            yield GenResult(r.key, self.answers[r.key], output_tokens=3, finish_reason="stop")

    def close(self):
        pass


def _gold(data: Path) -> dict:
    return {(CONFIG, t, 1024, r["index"]): " ".join(r["outputs"])
            for t in TASKS for r in rows(data, CONFIG, t, 1024)}


def _cfg(data: Path, out: Path, **kw) -> EvalConfig:
    return EvalConfig(model="/models/m", data=str(data), tokenizer_config=CONFIG, out=out,
                      model_tokenizer=CONFIG, progress=False, **kw)


def test_eval_resumes_without_redoing_finished_rows(data, tmp_path):
    out = tmp_path / "res"
    first = GoldBackend(_gold(data), fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        run_eval(_cfg(data, out), backend=first)
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2
    with open(out / "predictions.jsonl", "a") as fh:
        fh.write('{"tokenizer": "qwen2.5", "task": "niah_')  # a write torn by the crash
    second = GoldBackend(_gold(data))
    outcome = run_eval(_cfg(data, out), backend=second)
    assert (outcome.done_before, outcome.generated, second.calls) == (2, 4, 4)
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 6 and len({(r["task"], r["index"]) for r in records}) == 6
    scores = json.loads((out / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [100.0, 100.0]
    # Nothing left to do: a third run generates nothing and needs no engine.
    assert run_eval(_cfg(data, out), backend=None).generated == 0


def test_rows_longer_than_max_model_len_are_skipped_with_the_reason(data, tmp_path):
    out = tmp_path / "res"
    shortest = min(r["length"] for t in TASKS for r in rows(data, CONFIG, t, 1024))
    backend = GoldBackend(_gold(data), max_model_len=shortest)  # only the shortest row fits
    outcome = run_eval(_cfg(data, out), backend=backend)
    assert outcome.generated >= 1 and outcome.generated + outcome.skipped == 6
    skipped = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()
               if '"skipped"' in x]
    assert all(f"> max_model_len {shortest}" in r["reason"] and r["prediction"] is None
               for r in skipped)
    scores = json.loads((out / "scores.json").read_text())
    assert sum(c["skipped"] for c in scores["cells"]) == outcome.skipped
    for c in scores["cells"]:  # a cell with every row skipped has no score, not a zero
        assert c["score"] == (None if c["scored"] == 0 else 100.0)


def test_a_results_folder_from_another_dataset_revision_is_refused(data, tmp_path):
    out = tmp_path / "res"
    run_eval(_cfg(data, out, tasks=("niah_single_1",)), backend=GoldBackend(_gold(data)))
    other = tmp_path / "other"
    build(other, CONFIG, ("niah_single_1",), (1024,), samples=3, workers=1, seed=7)
    with pytest.raises(RulerError, match="different revision of the dataset"):
        run_eval(_cfg(other, out, tasks=("niah_single_1",)), backend=GoldBackend({}))
    # Scoring those predictions against the other revision is refused too.
    with pytest.raises(RulerError, match="different revision of the dataset"):
        score_file(out / "predictions.jsonl", open_dataset(str(other)))
    assert main(["report", str(out), "--data", str(other), "--no-plots"]) == 2


def test_a_tokenizer_that_does_not_reproduce_the_counts_is_refused(data, tmp_path):
    # llama-3.1 renders other token counts than the qwen2.5 the rows were built with.
    cfg = EvalConfig(model="/models/m", data=str(data), tokenizer_config=CONFIG,
                     out=tmp_path / "res", model_tokenizer="llama-3.1", progress=False)
    with pytest.raises(RulerError, match="does not reproduce the dataset's token counts"):
        run_eval(cfg, backend=GoldBackend({}))
    assert not (tmp_path / "res").exists()  # nothing written: the folder stays usable


def test_unknown_config_task_or_length_are_clear_errors(data, tmp_path):
    for kw, match in ((dict(tokenizer_config="llama-3.1"), "no tokenizer config 'llama-3.1'"),
                      (dict(tasks=("qa_1",)), "has no task 'qa_1'"),
                      (dict(lengths=(4096,)), "has no length 4096")):
        cfg = EvalConfig(**{**dict(model="m", data=str(data), tokenizer_config=CONFIG,
                                   out=tmp_path / "r", progress=False), **kw})
        with pytest.raises(RulerError, match=match):
            run_eval(cfg, backend=GoldBackend({}))


def test_hub_dataset_is_fetched_at_one_pinned_commit_with_only_the_selected_files(
        data, tmp_path, monkeypatch):
    """`--data ORG/NAME`: the commit is resolved once, then the manifest and only the selected
    split files are fetched at that commit. The Hub client is replaced by a local mirror here
    (no network in tests); what is checked is what the evaluator asks it for."""
    import shutil

    import huggingface_hub

    from ruler.eval.data import open_dataset as open_ds

    calls = []

    class Api:
        def dataset_info(self, repo, revision=None):
            calls.append(("info", repo, revision))
            return type("Info", (), {"sha": "c0ffee"})()

    def hf_hub_download(repo, filename, repo_type=None, revision=None):
        calls.append(("file", filename, revision, repo_type))
        return str(data / filename)

    def snapshot_download(repo, repo_type=None, revision=None, allow_patterns=()):
        calls.append(("snapshot", revision, tuple(allow_patterns)))
        root = tmp_path / "snapshot"
        for rel in allow_patterns:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data / rel, root / rel)
        return str(root)

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    ds = open_ds("org/ruler", "v1", CONFIG, ("niah_multikey_2",), (1024,))
    assert ds.revision == "c0ffee"
    assert calls == [("info", "org/ruler", "v1"),
                     ("file", "manifest.json", "c0ffee", "dataset"),
                     ("snapshot", "c0ffee", ("manifest.json",
                                             f"data/{CONFIG}/niah_multikey_2/1024.parquet"))]
    (f,) = ds.files(CONFIG, ("niah_multikey_2",), (1024,))
    assert [r["index"] for r in ds.rows(f)] == [0, 1, 2]

def _score_cli(data: Path, predictions: Path, *flags: str) -> int:
    return main(["score", "--predictions", str(predictions), "--data", str(data), *flags])


# --- odd prediction types are rejected, naming the row (issue 21.12) --------------------------

ODD_VALUES = [  # column, value, what the one-line error says
    ("prediction", {"text": "x"}, "prediction is a dict"),
    ("prediction", ["x"], "prediction is a list"),
    ("prediction", 7, "prediction is an int"),
    ("prediction", 7.5, "prediction is a float"),
    ("prediction", float("nan"), "prediction is NaN"),
    ("prediction", True, "prediction is a bool"),
    ("index", 1.5, "index 1.5 is not an integer"),
    ("index", float("nan"), "index nan is not an integer"),
    ("index", float("inf"), "index inf is not an integer"),
    ("index", True, "index True is not an integer"),
    ("index", "1", "index '1' is not an integer"),
    ("max_seq_length", 1024.5, "max_seq_length 1024.5 is not an integer"),
    ("task", 5, "task 5 is not a string"),
    ("data_sha256", 5, "data_sha256 5 is not a string"),
]


@pytest.mark.parametrize("column,value,message", ODD_VALUES,
                         ids=[f"{c}={v!r}" for c, v, _ in ODD_VALUES])
def test_odd_prediction_types_are_one_clear_error(data, tmp_path, capsys, column, value,
                                                  message):
    recs = _records(data)
    recs[1][column] = value
    path = _write_jsonl(tmp_path / "p.jsonl", recs)
    assert _score_cli(data, path, "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert f"{path}: record 2" in err and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_odd_parquet_columns_are_one_clear_error_and_integral_float_indexes_are_keys(
        data, tmp_path, capsys):
    recs = _records(data)
    for column, values, message in (
            ("prediction", [float("nan")] * len(recs), "prediction is NaN"),
            ("prediction", [{"a": 1}] * len(recs), "prediction is a dict"),
            ("index", [r["index"] + 0.5 for r in recs], "index 0.5 is not an integer")):
        path = tmp_path / f"{column}.parquet"
        pq.write_table(pa.Table.from_pylist([dict(r, **{column: v})
                                             for r, v in zip(recs, values)]), path)
        assert _score_cli(data, path, "--out", str(tmp_path / "out")) == 2
        err = capsys.readouterr().err
        assert f"{path}: record 1" in err and message in err, err
    # A float column of whole numbers (pandas writes one when a column had nulls) is exact:
    # index 2.0 is row 2. Documented in the README.
    path = tmp_path / "float_index.parquet"
    pq.write_table(pa.Table.from_pylist([dict(r, index=float(r["index"])) for r in recs]), path)
    report = score_file(path, open_dataset(str(data)))
    assert [(c.score, c.missing) for c in report.cells] == [(100.0, 0), (100.0, 0)]
