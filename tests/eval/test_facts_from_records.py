"""Facts come from records, never from names: a ONERULER build whose tokenizer folder is named
like another language's config (`q--oneruler-ko`, built with `--languages en`, so its config is
`q--oneruler-ko--oneruler-en`) is scored, reported and verified as the English build its
manifest records, by `ruler score`, `ruler report`, `ruler verify`, the lm-evaluation-harness
export and the Inspect task alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.paths import TOKENIZERS
from ruler.benchmarks.oneruler.languages import OnerulerLanguage
from ruler.benchmarks.oneruler.metric import NONE_WORDS
from ruler.benchmarks.oneruler.tasks import TASKS as ONERULER_TASKS
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

L = 1024
CONFIG = "q--oneruler-ko--oneruler-en"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """An English ONERULER build of llama-3.1's tokenizer, copied to a folder named
    `q--oneruler-ko`."""
    root = tmp_path_factory.mktemp("hostile")
    tokenizer = root / "q--oneruler-ko"
    shutil.copytree(TOKENIZERS / "llama-3.1", tokenizer)
    out = root / "build"
    build(out, str(tokenizer), ONERULER_TASKS, (L,), samples=2, benchmark="oneruler",
          axes={"language": OnerulerLanguage.parse("en")})
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["builds"][CONFIG]["language"] == "en"
    return out


@pytest.fixture(scope="module")
def gold_run(hostile, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "gold"
    assert main(["eval", "--backend", "fake", "--model", "m", "--data", str(hostile),
                 "--model-tokenizer", str(hostile.parent / "q--oneruler-ko"),
                 "--out", str(out), "--no-progress", "--render-workers", "0",
                 "--no-plots"]) == 0
    return out


def test_gold_answers_score_100_by_the_recorded_language(gold_run):
    answers = {json.loads(x)["prediction"] for x in
               (gold_run / "predictions.jsonl").read_text().splitlines()
               if json.loads(x)["task"] == "or_niah_none"}
    assert answers == {NONE_WORDS["en"][0]}
    scores = json.loads((gold_run / "scores.json").read_text())
    assert {c["task"]: c["score"] for c in scores["cells"]} == {
        t: 100.0 for t in ONERULER_TASKS}
    # the facts the scores rest on are recorded, from the manifest
    assert (scores["benchmark"], scores["axes"]) == ("oneruler", {"language": "en"})


def test_ruler_score_rescores_by_the_recorded_language(gold_run, hostile, tmp_path):
    for metric in ("oneruler", "oneruler_corrected"):
        out = tmp_path / metric
        assert main(["score", "--no-plots", "--predictions",
                     str(gold_run / "predictions.jsonl"), "--data", str(hostile), "--metric",
                     metric, "--out", str(out)]) == 0
        cells = json.loads((out / "scores.json").read_text())["cells"]
        assert {c["score"] for c in cells} == {100.0}


def test_the_report_names_the_recorded_language(gold_run, tmp_path):
    report = (gold_run / "report.md").read_text()
    assert "Language: `en`." in report and "`ko`" not in report.split("## ")[0]
    out = tmp_path / "again"
    assert main(["report", str(gold_run), "--out", str(out), "--no-plots"]) == 0
    assert "Language: `en`." in (out / "report.md").read_text()


def test_the_language_table_places_the_run_by_its_recorded_language(gold_run):
    from ruler.benchmarks.oneruler.report import language_tables
    from ruler.eval.report.run import build_report, load_scores

    table, = language_tables([(str(gold_run), build_report(load_scores(gold_run)))])
    assert table.languages == ["en"]


def test_verify_checks_the_rows_against_the_recorded_language(hostile, capsys):
    tokenizer = hostile.parent / "q--oneruler-ko"
    assert main(["verify", str(hostile), "--tokenizer", f"{CONFIG}={tokenizer}"]) == 0, \
        capsys.readouterr()
    assert "answer not recoverable" not in capsys.readouterr().out


@pytest.mark.subprocess
def test_the_lm_eval_export_scores_by_the_recorded_language(hostile, tmp_path):
    from ruler.builder.manifest import Manifest
    from ruler.eval.integrations import lm_eval_export as ex

    folder = ex.write_export(ex.export_files(Manifest.load(hostile), ex.local_source(hostile)),
                             tmp_path / "tasks")
    docs = [{k: r[k] for k in ("task", "tokenizer", "metric", "outputs")}
            for t in ONERULER_TASKS for r in rows(hostile, CONFIG, t, L)]
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"docs = json.loads(sys.stdin.read())\n"
            f"print(json.dumps([utils.process_results(d, [' '.join(d['outputs'])])['score']\n"
            f"                  for d in docs]))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                          text=True, check=True, input=json.dumps(docs))
    assert json.loads(done.stdout) == [1.0] * len(docs)


def _older_scores(gold_run: Path, folder: Path, spec: str | None = None) -> Path:
    """The run's scores.json as a ruler that did not record the benchmark and language wrote
    it (optionally scored on a dataset at `spec`)."""
    scores = json.loads((gold_run / "scores.json").read_text())
    del scores["benchmark"], scores["axes"], scores["benchmark_package"]
    if spec is not None:
        scores["dataset"]["spec"] = spec
    folder.mkdir(parents=True)
    (folder / "scores.json").write_text(json.dumps(scores))
    return folder


def test_older_scores_take_the_language_from_the_manifest_they_were_scored_on(gold_run,
                                                                             tmp_path):
    from ruler.eval.report.run import build_report, load_scores

    older = _older_scores(gold_run, tmp_path / "older")
    r = build_report(load_scores(older))
    assert (r.benchmark, r.axes) == ("oneruler", {"language": "en"})


def test_older_scores_without_their_dataset_say_the_language_is_not_recorded(gold_run,
                                                                            tmp_path, capsys):
    older = _older_scores(gold_run, tmp_path / "older", spec=str(tmp_path / "gone"))
    out = tmp_path / "report"
    assert main(["report", str(older), "--out", str(out), "--no-plots"]) == 0
    report = (out / "report.md").read_text()
    assert "Language: not recorded (scored by an older ruler" in report and "`ko`" not in report
    # the language table cannot place the run: one line, no guess
    capsys.readouterr()
    assert main(["report", str(older), str(gold_run), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "record no language" in err and "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.engines
def test_the_inspect_task_scores_by_the_recorded_language(hostile):
    pytest.importorskip("inspect_ai")
    from ruler.eval.integrations.inspect_task import row_score, ruler_samples

    samples, _ = ruler_samples(str(hostile), lengths=L)
    assert {s.metadata["metric_key"] for s in samples} == {"en"}
    none_rows = [s for s in samples if s.metadata["task"] == "or_niah_none"]
    assert none_rows and all(
        row_score(NONE_WORDS["en"][0], s.metadata["metric"], s.target, s.metadata["task"],
                  s.metadata["metric_key"]) == 1.0 for s in none_rows)
