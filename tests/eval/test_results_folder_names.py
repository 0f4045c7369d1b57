"""`ruler eval` without --out writes into results/<model name>, a folder made from the model
string whatever it holds (issue 40.9): `--model ..` wrote predictions, scores and the report
into the current folder (over the user's report.md), `--model .` into results/ itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruler.commands.main import main
from ruler.eval.config import default_results_folder
from ruler.kernel.file_names import MAX_NAME_BYTES, safe_name

CONFIG = "qwen2.5"

ODD_MODELS = ["..", ".", "./", "../", "../..", "/", "", "org/name/", "../models/m/",
              "/abs/path/m", "C:\\models\\m", "a\nb", "a|b<c>", "---", "...", ".hidden",
              "-rf", "x" * 400, "é" * 300, "org/" + "y" * 300, "\udcff\udcfe"]


@pytest.mark.parametrize("model", ODD_MODELS)
def test_the_default_folder_is_one_plain_folder_inside_results(model):
    folder = default_results_folder(model)
    assert folder.parent == Path("results")
    name = folder.name
    assert name and name not in (".", "..") and not name.startswith((".", "-"))
    assert "/" not in name and "\\" not in name and "\n" not in name
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES


def test_names_keep_what_they_can_and_stay_apart():
    assert default_results_folder("org/model-7b") == Path("results/model-7b")
    assert default_results_folder("../models/llama-3.1-8b/") == Path("results/llama-3.1-8b")
    assert default_results_folder("..") == default_results_folder(".") == Path("results/model")
    long_a, long_b = "a" * 300 + "1", "a" * 300 + "2"
    assert safe_name(long_a, "m") != safe_name(long_b, "m")  # a cut name ends with a hash
    assert safe_name("a\nb", "m") == "a--b" and safe_name("--", "m") == "m"


@pytest.mark.build
@pytest.mark.parametrize("model", ["..", ".", "../"])
def test_eval_with_a_dotted_model_writes_only_inside_results(model, built_qwen_niah_vt,
                                                             tmp_path, monkeypatch):
    work = tmp_path / "work" / "here"
    work.mkdir(parents=True)
    (work / "report.md").write_text("my own report\n")
    (work / "report.csv").write_text("my,own\n")
    monkeypatch.chdir(work)
    assert main(["eval", "--backend", "fake", "--model", model, "--model-tokenizer", CONFIG,
                 "--data", str(built_qwen_niah_vt), "--limit", "1", "--no-progress",
                 "--no-plots", "--render-workers", "0"]) == 0
    assert (work / "report.md").read_text() == "my own report\n"
    assert (work / "report.csv").read_text() == "my,own\n"
    assert sorted(p.name for p in work.iterdir()) == ["report.csv", "report.md", "results"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert [p.name for p in (work / "results").iterdir()] == ["model"]
    assert (work / "results/model/predictions.jsonl").is_file()
    assert (work / "results/model/report.md").is_file()


# --- other names made into files: a model's language heatmaps, a task's depth heatmap ----------

def test_language_heatmaps_of_odd_model_names_stay_in_their_folder_and_apart(tmp_path):
    """`<model>_language_length.png`: a model named `../../x` wrote outside the report's
    folder, one of 300 characters failed (file name too long), `a/b` and `a_b` shared a file."""
    from ruler.benchmarks.oneruler.report import language_tables, write_language_heatmaps
    from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
    from ruler.eval.records.scores_record import SCORES_FORMAT, ScoresRecord
    from ruler.eval.report.run import build_report

    def run(model: str, lang: str):
        cells = [dict(task=t, max_seq_length=1024, metric="oneruler", score=100.0, rows=1,
                      scored=1, nulls=0, skipped=0, errors=0, missing=0, data_sha256=f"sha-{t}",
                      row_scores=[[0, 1.0]]) for t in ONERULER_TASKS]
        scores = {"format": SCORES_FORMAT, "config": f"llama-3.1--oneruler-{lang}",
                  "model": model, "cells": cells, "benchmark": "oneruler", "language": lang,
                  "dataset": {
                      "spec": "d", "revision": None,
                      "files": {f"{t}/1024": f"sha-{t}" for t in ONERULER_TASKS}}}
        return f"{model}-{lang}", build_report(ScoresRecord.from_json(scores))

    models = ["../../outside", "x" * 300, "a/b", "a_b", "a b", ".."]
    runs = [run(model, lang) for model in models for lang in ("en", "ko")]
    out = tmp_path / "report"
    paths = write_language_heatmaps(language_tables(runs), out)
    assert len(paths) == 2 * len(models) == len(set(paths))
    assert all(p.parent == out / "language_heatmaps" and p.is_file() for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_depth_heatmap_of_an_odd_task_name_stays_in_its_folder(tmp_path):
    from ruler.eval.metrics.depth import depth_table
    from ruler.eval.report.depth import HEATMAP_DIR, write_heatmaps

    items = {"../../outside/1024": [[0.25, 1.0], [0.75, 0.0]], "y" * 300 + "/1024": [[0.5, 1.0]]}
    out = tmp_path / "run"
    paths = write_heatmaps(depth_table(items, bins=2), out, "m")
    assert len(paths) == 2 and all(p.parent == out / HEATMAP_DIR and p.is_file() for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.build
def test_score_beside_a_predictions_file_of_a_long_name(built_qwen_niah_vt, tmp_path):
    """`<file>.scores/` beside a file whose name is near the file system's 255 bytes was past
    it: an OSError traceback. A name past the limit is cut (with its hash)."""
    run = tmp_path / "run"
    assert main(["eval", "--backend", "fake", "--model", "m", "--model-tokenizer", CONFIG,
                 "--data", str(built_qwen_niah_vt), "--out", str(run), "--limit", "1",
                 "--no-progress", "--no-report", "--render-workers", "0"]) == 0
    long = tmp_path / ("p" * 245 + ".jsonl")
    long.write_bytes((run / "predictions.jsonl").read_bytes())
    assert main(["score", "--predictions", str(long), "--data", str(built_qwen_niah_vt),
                 "--no-plots"]) == 0
    (scores,) = [p for p in tmp_path.iterdir() if p.name.endswith(".scores")]
    assert (scores / "scores.json").is_file() and len(scores.name) <= MAX_NAME_BYTES + 7
    assert scores.name.startswith("p" * 50)
