"""`ruler score` and the evaluator's bookkeeping on a real build (no inference stack needed).

Predictions are written by hand, as another framework would, or come from the fake backend
that answers with the gold values (the real engines are exercised in test_eval_vllm.py).
Covers: perfect and partial scores, missing and unknown rows, missing columns, duplicate keys,
a results folder from another dataset revision, the tokenizer-count check, resume.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.builds import build, rows
from ruler.commands.main import main
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.records.dataset import open_dataset
from ruler.eval.runner import EvalConfig, run_eval
from ruler.eval.scoring.score import score_file
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build]

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
    scores = json.loads((tmp_path / "p.parquet.scores" / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [66.67, 100.0]
    assert (tmp_path / "p.parquet.scores" / "report.md").is_file()
    assert "66.67" in capsys.readouterr().out
    figures = ["scores_by_task.png", "scores_overall.png", "depth_heatmaps/niah.png"]
    assert all((tmp_path / "p.parquet.scores" / f).is_file() for f in figures)
    # --no-plots: the same report, without its figures
    bare = tmp_path / "bare"
    assert main(["score", "--predictions", str(tmp_path / "p.parquet"), "--data", str(data),
                 "--out", str(bare), "--no-plots"]) == 0
    assert sorted(p.name for p in bare.iterdir()) == [
        "report.csv", "report.json", "report.md", "report_depth.csv", "scores.json"]
    assert (bare / "report.md").read_text() == \
        (tmp_path / "p.parquet.scores" / "report.md").read_text().replace(
            str(tmp_path / "p.parquet.scores"), str(bare))


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


class GoldBackend(FakeBackend):
    """The fake engine (gold answers), counting its calls; interrupted after `fail_after`."""

    def __init__(self, data: Path, fail_after: int | None = None,
                 max_model_len: int | None = None):
        super().__init__(FakeOptions("/models/m", max_model_len, data=str(data)))
        self.calls, self.fail_after = 0, fail_after

    def answer(self, request):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt  # an interrupted run
        self.calls += 1
        return super().answer(request)


def _cfg(data: Path, out: Path, **kw) -> EvalConfig:
    return EvalConfig(model="/models/m", data=str(data), tokenizer_config=CONFIG, out=out,
                      model_tokenizer=CONFIG, progress=False, **kw)


@pytest.mark.subprocess
def test_eval_resumes_without_redoing_finished_rows(data, tmp_path):
    out = tmp_path / "res"
    first = GoldBackend(data, fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        run_eval(_cfg(data, out), backend=first)
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2
    with open(out / "predictions.jsonl", "a") as fh:
        fh.write('{"tokenizer": "qwen2.5", "task": "niah_')  # a write torn by the crash
    second = GoldBackend(data)
    outcome = run_eval(_cfg(data, out), backend=second)
    assert (outcome.done_before, outcome.generated, second.calls) == (2, 4, 4)
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 6 and len({(r["task"], r["index"]) for r in records}) == 6
    scores = json.loads((out / "scores.json").read_text())
    assert [c["score"] for c in scores["cells"]] == [100.0, 100.0]
    # Nothing left to do: a third run generates nothing and needs no engine.
    assert run_eval(_cfg(data, out), backend=None).generated == 0


@pytest.mark.subprocess
def test_rows_longer_than_max_model_len_are_skipped_with_the_reason(data, tmp_path):
    out = tmp_path / "res"
    shortest = min(r["length"] for t in TASKS for r in rows(data, CONFIG, t, 1024))
    backend = GoldBackend(data, max_model_len=shortest)  # only the shortest row fits
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


@pytest.mark.subprocess
def test_a_results_folder_from_another_dataset_revision_is_refused(data, tmp_path):
    out = tmp_path / "res"
    run_eval(_cfg(data, out, tasks=("niah_single_1",)), backend=GoldBackend(data))
    other = tmp_path / "other"
    build(other, CONFIG, ("niah_single_1",), (1024,), samples=3, workers=1, seed=7)
    with pytest.raises(RulerError, match="different revision of the dataset"):
        run_eval(_cfg(other, out, tasks=("niah_single_1",)), backend=GoldBackend(data))
    # Scoring those predictions against the other revision is refused too.
    with pytest.raises(RulerError, match="different revision of the dataset"):
        score_file(out / "predictions.jsonl", open_dataset(str(other)))
    assert main(["report", str(out), "--data", str(other), "--no-plots"]) == 2


def test_a_tokenizer_that_does_not_reproduce_the_counts_is_refused(data, tmp_path):
    # llama-3.1 renders other token counts than the qwen2.5 the rows were built with.
    cfg = EvalConfig(model="/models/m", data=str(data), tokenizer_config=CONFIG,
                     out=tmp_path / "res", model_tokenizer="llama-3.1", progress=False)
    with pytest.raises(RulerError, match="does not reproduce the dataset's token counts"):
        run_eval(cfg, backend=GoldBackend(data))
    assert not (tmp_path / "res").exists()  # nothing written: the folder stays usable


def test_unknown_config_task_or_length_are_clear_errors(data, tmp_path):
    for kw, match in ((dict(tokenizer_config="llama-3.1"), "no tokenizer config 'llama-3.1'"),
                      (dict(tasks=("qa_1",)), "has no task 'qa_1'"),
                      (dict(lengths=(4096,)), "has no length 4096")):
        cfg = EvalConfig(**{**dict(model="m", data=str(data), tokenizer_config=CONFIG,
                                   out=tmp_path / "r", progress=False), **kw})
        with pytest.raises(RulerError, match=match):
            run_eval(cfg, backend=GoldBackend(data))


def test_hub_dataset_is_fetched_at_one_pinned_commit_with_only_the_selected_files(
        data, tmp_path, monkeypatch):
    """`--data ORG/NAME`: the commit is resolved once, then the manifest and only the selected
    split files are fetched at that commit. The Hub client is replaced by a local mirror here
    (no network in tests); what is checked is what the evaluator asks it for."""
    import shutil

    import huggingface_hub

    from ruler.eval.records.dataset import open_dataset as open_ds

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


def test_a_hub_manifest_naming_no_split_file_is_refused_before_any_file_is_fetched(
        data, tmp_path, monkeypatch):
    """Issue 21.1 for `--data ORG/NAME`: the downloaded manifest is checked as a local one is
    (known configs, tasks and lengths only) before a file is fetched or a path is built."""
    import huggingface_hub

    from ruler.eval.records.dataset import open_dataset as open_ds

    manifest = json.loads((data / "manifest.json").read_text())
    rel = f"data/{CONFIG}/niah_multikey_2/1024.parquet"
    task = "x/../../../../pwn"
    manifest["files"][f"data/{CONFIG}/{task}/1024.parquet"] = {**manifest["files"][rel],
                                                               "task": task}
    hostile = tmp_path / "manifest.json"
    hostile.write_text(json.dumps(manifest))
    calls = []

    class Api:
        def dataset_info(self, repo, revision=None):
            return type("Info", (), {"sha": "c0ffee"})()

    def snapshot_download(*args, **kwargs):
        calls.append("snapshot")
        raise AssertionError("nothing may be fetched")

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: str(hostile))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    with pytest.raises(RulerError, match=r"manifest.json of org/ruler@c0ffee: entry .* names "
                                         r"unknown task 'x/\.\./\.\./\.\./\.\./pwn'"):
        open_ds("org/ruler", "v1", CONFIG, None, None)
    assert calls == []


# --- coverage: a headline only over what was asked for (issue 21.4) ---------------------------

GRID_LENGTHS = (1024, 2048)


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    """Two tasks x two lengths: room for a whole task or a whole length to be missing."""
    out = tmp_path_factory.mktemp("grid")
    build(out, CONFIG, TASKS, GRID_LENGTHS, samples=3, workers=1)
    return out


def _grid_records(grid: Path, keep=lambda task, L, index: True) -> list[dict]:
    """Another framework's predictions that kept each row's prompt (which ties them to the
    build: `--strict` fails on predictions that carry nothing of their rows)."""
    return [{"tokenizer": CONFIG, "task": t, "max_seq_length": L, "index": r["index"],
             "prediction": " ".join(r["outputs"]), "input": r["input"]}
            for L in GRID_LENGTHS for t in TASKS for r in rows(grid, CONFIG, t, L)
            if keep(t, L, r["index"])]


def _score_cli(grid: Path, predictions: Path, *flags: str, plots: bool = False) -> int:
    """`ruler score`, by default without the report's figures (drawing them is most of a small
    score's time; test_parquet_predictions_and_cli and the partial case below draw them)."""
    return main(["score", "--predictions", str(predictions), "--data", str(grid), *flags,
                 *(() if plots else ("--no-plots",))])


SUBSETS = {  # what the predictions lack -> (cells left incomplete: (task, L, rows done))
    "a whole task": (lambda t, L, i: t == "niah_multikey_2",
                     [("niah_multikey_2", 1024, 0), ("niah_multikey_2", 2048, 0)]),
    "a whole length": (lambda t, L, i: L == 2048,
                       [("niah_single_1", 2048, 0), ("niah_multikey_2", 2048, 0)]),
    "a few rows": (lambda t, L, i: (t, L) == ("niah_single_1", 2048) and i < 2,
                   [("niah_single_1", 2048, 1)]),
}


@pytest.mark.parametrize("case", SUBSETS)
def test_a_silent_subset_of_the_predictions_never_gets_a_headline(grid, tmp_path, capsys, case):
    lacks, incomplete = SUBSETS[case]
    path = _write_jsonl(tmp_path / "p.jsonl",
                        _grid_records(grid, lambda *k: not lacks(*k)))
    n_missing = sum(3 - done for _, _, done in incomplete)
    out = tmp_path / "out"
    # A length without results is drawn too: its points and heatmap column left empty.
    plots = case == "a whole length"
    assert _score_cli(grid, path, "--out", str(out), plots=plots) == 0
    assert (out / "scores_by_task.png").is_file() is plots
    assert (out / "depth_heatmaps" / "niah.png").is_file() is plots
    printed = capsys.readouterr().out
    named = [f"{t} @ {L // 1024}K ({done}/3)" for t, L, done in incomplete]
    assert f"PARTIAL: {12 - n_missing} of 12 rows asked for have a result" in printed
    assert all(n in printed for n in named), printed
    # The headline row: effective length and the averages withheld, not computed on a subset.
    headline = next(x for x in printed.splitlines() if x.startswith("| n/a (partial) |"))
    assert headline.endswith("| n/a | n/a | n/a |"), headline

    scores = json.loads((out / "scores.json").read_text())
    assert len(scores["cells"]) == 4  # every (task, length) asked for has its cell
    assert sum(c["missing"] for c in scores["cells"]) == n_missing == len(scores["missing"])
    assert scores["selection"] == {"tasks": list(TASKS), "lengths": list(GRID_LENGTHS),
                                   "limit": None, "by": "config"}
    assert scores["coverage"] == {
        "expected": 12, "done": 12 - n_missing, "complete": False,
        "incomplete_cells": [f"{t}/{L}" for t, L, _ in incomplete]}

    report = json.loads((out / "report.json").read_text())
    assert report["complete"] is False
    assert (report["avg"], report["wavg_inc"], report["wavg_dec"],
            report["effective_length"]) == (None, None, None, None)
    assert report["effective_length_label"] == "n/a (partial)"
    assert report["incomplete_cells"] == [f"{t}/{L}" for t, L, _ in incomplete]
    for t, L, done in incomplete:
        assert report["coverage"][t][str(L)] == f"{done}/3"
        assert report["mean_by_length"][str(L)] is None  # a length with a gap has no mean
    complete_lengths = {L for L in GRID_LENGTHS} - {L for _, L, _ in incomplete}
    assert all(report["mean_by_length"][str(L)] == 100.0 for L in complete_lengths)

    md = (out / "report.md").read_text()
    assert "**Partial results**" in md and all(n in md for n in named)
    assert "## Coverage" in md
    assert _score_cli(grid, path, "--out", str(out), "--strict") == 1


def test_a_selection_named_by_flags_that_is_complete_has_its_headline(grid, tmp_path, capsys):
    path = _write_jsonl(tmp_path / "p.jsonl",
                        _grid_records(grid, lambda t, L, i: (t, L) == ("niah_single_1", 1024)))
    out = tmp_path / "out"
    assert _score_cli(grid, path, "--out", str(out), "--tasks", "niah_single_1",
                      "--lengths", "1k", "--strict") == 0
    printed = capsys.readouterr().out
    assert ("complete: 3 of 3 rows asked for have a result (1 task(s) x 1 length(s), as "
            "--tasks/--lengths select)") in printed
    assert "| 1K | <ins>100.0</ins> | 100.0 | 100.0 | 100.0 |" in printed
    scores = json.loads((out / "scores.json").read_text())
    assert scores["selection"] == {"tasks": ["niah_single_1"], "lengths": [1024], "limit": None,
                                   "by": "flags"}
    assert scores["coverage"]["complete"] is True
    report = json.loads((out / "report.json").read_text())
    assert (report["complete"], report["avg"], report["effective_length"]) == (True, 100.0, 1024)
    # --limit N: the first N rows of every file are what was asked for.
    first2 = _write_jsonl(tmp_path / "first2.jsonl", _grid_records(grid, lambda t, L, i: i < 2))
    assert _score_cli(grid, first2, "--limit", "2", "--strict") == 0
    assert json.loads((tmp_path / "first2.jsonl.scores" / "scores.json").read_text())[
        "coverage"] == {"expected": 8, "done": 8, "complete": True, "incomplete_cells": []}
    assert _score_cli(grid, first2, "--strict") == 1  # every row asked for
    capsys.readouterr()
    assert _score_cli(grid, path, "--out", str(out), "--tasks", "qa_1") == 2
    assert "has no task 'qa_1'" in capsys.readouterr().err


@pytest.mark.subprocess
def test_predictions_of_a_ruler_eval_run_are_scored_against_what_it_asked_for(
        grid, tmp_path, capsys):
    out = tmp_path / "res"
    run_eval(_cfg(grid, out, limit=2, lengths=(1024,)), backend=GoldBackend(grid))
    assert json.loads((out / "scores.json").read_text())["coverage"]["complete"] is True
    # run.json beside predictions.jsonl: --lengths 1024 --limit 2, so 4 rows asked for.
    assert _score_cli(grid, out / "predictions.jsonl", "--strict") == 0
    scores = json.loads((out / "predictions.jsonl.scores" / "scores.json").read_text())
    assert scores["selection"] == {"tasks": list(TASKS), "lengths": [1024], "limit": 2,
                                   "by": "run"}
    assert scores["coverage"]["expected"] == 4 and scores["model"] == "/models/m"
    assert ("complete: 4 of 4 rows asked for have a result (2 task(s) x 1 length(s), as the "
            "run asked, first 2 rows of each)") in capsys.readouterr().out
    # Flags say what is asked for instead: both lengths, every row.
    assert _score_cli(grid, out / "predictions.jsonl", "--out", str(tmp_path / "s"),
                      "--lengths", "1k,2k", "--limit", "3") == 0
    assert json.loads((tmp_path / "s" / "scores.json").read_text())["coverage"][
        "incomplete_cells"] == [f"{t}/{L}" for L in GRID_LENGTHS for t in TASKS]


@pytest.mark.subprocess
def test_the_report_of_an_interrupted_eval_has_no_headline(grid, tmp_path, capsys):
    out = tmp_path / "res"
    run_eval(_cfg(grid, out, lengths=(1024,)), backend=GoldBackend(grid))  # 1K complete
    assert main(["report", str(out), "--no-plots"]) == 0
    assert json.loads((out / "report.json").read_text())["complete"] is True
    with pytest.raises(KeyboardInterrupt):  # then 1K + 2K, interrupted after one row
        run_eval(_cfg(grid, out, lengths=(1024, 2048)), backend=GoldBackend(grid, fail_after=1))
    capsys.readouterr()
    assert main(["report", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "**Partial results**" in printed
    assert all(f"{t} @ 2K (not scored)" in printed for t in TASKS), printed
    report = json.loads((out / "report.json").read_text())
    assert (report["complete"], report["avg"], report["effective_length"]) == (False, None, None)
    assert report["incomplete_cells"] == [f"{t}/2048" for t in TASKS]


# --- one output folder per predictions file (issue 21.16) -------------------------------------

def test_each_predictions_file_keeps_its_own_scores(data, tmp_path, capsys):
    import hashlib

    a = _write_jsonl(tmp_path / "a.jsonl", _records(data))
    b = _write_jsonl(tmp_path / "b.jsonl", _records(data, lambda r: "wrong"))
    assert _score_cli(data, a) == 0 and _score_cli(data, b) == 0
    assert not (tmp_path / "scores.json").exists()

    def scores_of(path: Path) -> dict:
        return json.loads((tmp_path / f"{path.name}.scores" / "scores.json").read_text())

    assert [c["score"] for c in scores_of(a)["cells"]] == [100.0, 100.0]
    assert [c["score"] for c in scores_of(b)["cells"]] == [0.0, 0.0]
    assert scores_of(a)["predictions"] == {"path": str(a.resolve()),
                                           "sha256": hashlib.sha256(a.read_bytes()).hexdigest()}
    assert (tmp_path / "a.jsonl.scores" / "report.md").is_file()
    # Re-scoring a file (its predictions changed) replaces its own results.
    _write_jsonl(a, _records(data, lambda r: "wrong"))
    assert _score_cli(data, a) == 0
    assert [c["score"] for c in scores_of(a)["cells"]] == [0.0, 0.0]
    # Another file's results are never overwritten: --out at them is refused.
    before = (tmp_path / "b.jsonl.scores" / "scores.json").read_bytes()
    capsys.readouterr()
    c = _write_jsonl(tmp_path / "c.jsonl", _records(data))
    assert _score_cli(data, c, "--out", str(tmp_path / "b.jsonl.scores")) == 2
    err = capsys.readouterr().err
    assert "holds the scores of other predictions" in err and str(b.resolve()) in err
    assert (tmp_path / "b.jsonl.scores" / "scores.json").read_bytes() == before
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "PREDICTIONS.scores" in capsys.readouterr().out


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
    # index 2.0 is row 2. Documented in docs/scoring.md.
    path = tmp_path / "float_index.parquet"
    pq.write_table(pa.Table.from_pylist([dict(r, index=float(r["index"])) for r in recs]), path)
    report = score_file(path, open_dataset(str(data)))
    assert [(c.score, c.missing) for c in report.cells] == [(100.0, 0), (100.0, 0)]


# --- the only config is the default (issue 21.17) ---------------------------------------------

def test_score_defaults_to_the_only_config_of_the_dataset(data, tmp_path, capsys):
    # Predictions of another config beside the dataset's: the dataset's only config is
    # scored, the others are listed as matching no row (never silently dropped).
    recs = _records(data) + [dict(_records(data)[0], tokenizer="gpt-4")]
    path = _write_jsonl(tmp_path / "p.jsonl", recs)
    assert _score_cli(data, path, "--out", str(tmp_path / "out")) == 0
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert scores["config"] == CONFIG and scores["unknown"] == ["gpt-4/niah_single_1/1024#0"]
    assert [c["score"] for c in scores["cells"]] == [100.0, 100.0]
    assert "1 predictions that match no dataset row" in capsys.readouterr().err

    from dataclasses import replace

    from ruler.builder.manifest import BuildEntry
    from ruler.catalog.manifest_records import TokenizerRecord
    from ruler.eval.records.dataset import Dataset, default_config

    ds = open_dataset(str(data))
    assert default_config(ds) == CONFIG
    builds = {**ds.manifest.builds, "llama-3.1": BuildEntry(
        tokenizer=TokenizerRecord(name="llama-3.1", kind="hf"))}
    two = Dataset(ds.spec, None, ds.root, replace(ds.manifest, builds=builds))
    with pytest.raises(RulerError, match=r"2 tokenizer configs \(llama-3.1, qwen2.5\).*"
                                         r"--tokenizer-config"):
        default_config(two)


def test_score_out_keeps_the_model_name_of_predictions_moved_away_from_their_run(data,
                                                                                tmp_path):
    """Each prediction names its model: scored where it lies (with run.json beside it) or
    copied elsewhere, the report says whose answers these are, not "unknown model"."""
    out = tmp_path / "res"
    run_eval(EvalConfig(model="/models/my-model", data=str(data), tokenizer_config=CONFIG,
                        out=out, backend="fake", model_tokenizer=CONFIG, progress=False,
                        render_workers=0, plots=False),
             backend=FakeBackend(FakeOptions("/models/my-model", data=str(data))))
    moved = tmp_path / "elsewhere" / "preds.jsonl"
    moved.parent.mkdir()
    moved.write_bytes((out / "predictions.jsonl").read_bytes())
    for predictions, scored in ((out / "predictions.jsonl", tmp_path / "s1"),
                                (moved, tmp_path / "s2")):
        assert main(["score", "--predictions", str(predictions), "--data", str(data),
                     "--out", str(scored), "--no-plots"]) == 0
        assert json.loads((scored / "scores.json").read_text())["model"] == "/models/my-model"
        assert (scored / "report.md").read_text().startswith(
            "# RULER results: /models/my-model\n")
