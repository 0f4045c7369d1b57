"""An ONERULER answer holding a run of more than 4,300 digits (Python's default limit on what
`int()` converts from text): upstream's `int()` raises there and its `except Exception:
return False` scores the row wrong; so do both of ruler's ONERULER metrics, in `ruler score`,
at the end of `ruler eval` and in the exported lm-eval utils.py, with no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import rows
from ruler.benchmarks.oneruler.metric import INT_DIGITS, oneruler, oneruler_corrected
from ruler.commands.main import main
from ruler.eval.backends import GenResult
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.runner import EvalConfig, run_eval

CONFIG, TASK, L = "llama-3.1--oneruler-en", "or_niah_single", 1024
HUGE = "7" * 5000


@pytest.mark.parametrize("metric", [oneruler, oneruler_corrected])
def test_a_run_past_the_int_limit_is_a_wrong_answer(metric):
    gold = ["2867825"]
    assert metric(f"The number is {HUGE}.", gold, TASK, "en") == 0.0
    assert metric(f"2867825 and {HUGE}", gold, TASK, "en") == 0.0
    # at the limit int() still converts: leading zeros make the gold value, as upstream
    # reads it under Python's default limit; one digit more and upstream's int() raises
    at_limit = "0" * (INT_DIGITS - 7) + "2867825"
    assert metric(at_limit, gold, TASK, "en") == 1.0
    assert metric("0" + at_limit, gold, TASK, "en") == 0.0
    # a reference that is no number makes the row wrong, as upstream's second `try` does
    assert metric("2867825", ["n/a"], TASK, "en") == 0.0


@pytest.fixture(scope="module")
def data(built_llama_oneruler) -> Path:
    return built_llama_oneruler  # conftest: read only


class _Huge(FakeBackend):
    """The gold answers, but a 5,000-digit run for the first or_niah_single row."""

    def answer(self, request):
        result = super().answer(request)
        if request.key[1] == TASK and request.key[3] == 0:
            return GenResult(request.key, f"{HUGE}", 1, "stop")
        return result


@pytest.mark.build
def test_ruler_eval_and_score_score_it_wrong_without_a_traceback(data, tmp_path, capsys):
    out = tmp_path / "run"
    run_eval(EvalConfig(model="m", data=str(data), tokenizer_config=CONFIG, tasks=(TASK,),
                        out=out, progress=False, render_workers=0, backend="fake"),
             backend=_Huge(FakeOptions("m", data=str(data))))
    cell, = json.loads((out / "scores.json").read_text())["cells"]
    assert (cell["scored"], cell["score"]) == (3, 200 / 3)
    for metric in ("oneruler", "oneruler_corrected"):
        again = tmp_path / metric
        assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data",
                     str(data), "--metric", metric, "--out", str(again), "--no-plots"]) == 0
        cell, = json.loads((again / "scores.json").read_text())["cells"]
        assert cell["score"] == 200 / 3
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.build
@pytest.mark.subprocess
def test_the_exported_utils_py_scores_it_wrong(data, tmp_path):
    from ruler.builder.manifest import Manifest
    from ruler.eval.integrations import lm_eval_export as ex

    folder = ex.write_export(ex.export_files(Manifest.load(data), ex.local_source(data)),
                             tmp_path / "tasks")
    doc = {k: rows(data, CONFIG, TASK, L)[0][k] for k in ("task", "tokenizer", "metric",
                                                          "outputs")}
    code = (f"import json, sys; sys.path.insert(0, {str(folder)!r}); import utils\n"
            f"doc = json.loads(sys.stdin.read())\n"
            f"print(json.dumps([utils.process_results(doc, [a])['score'] for a in "
            f"['{HUGE}', ' '.join(doc['outputs'])]]))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                          text=True, check=True, input=json.dumps(doc))
    assert json.loads(done.stdout) == [0.0, 1.0]
