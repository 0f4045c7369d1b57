"""The Python API (`ruler.build | load | verify | evaluate | score`, issue 22.5): what a
notebook user calls, end to end on a real build, with the commands' own checks."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ruler
from ruler.kernel.errors import RulerError


@pytest.mark.subprocess
def test_the_package_exports_the_api_and_stays_light_to_import():
    code = ("import sys, ruler; print(sorted(ruler.__all__)); "
            "print(sorted(m for m in ('datasets', 'pyarrow', 'ruler.api', 'ruler.eval.runner') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    exported, heavy = done.stdout.splitlines()
    assert exported == str(sorted(["build", "load", "verify", "evaluate", "score",
                                   "__version__"]))
    assert heavy == "[]"
    assert set(ruler.__all__) <= set(dir(ruler))
    with pytest.raises(AttributeError):
        ruler.no_such_function  # noqa: B018


@pytest.mark.build
@pytest.mark.subprocess
def test_build_load_verify_evaluate_score_from_python(tmp_path):
    data = tmp_path / "data"
    report = ruler.build("gpt-4", tasks=["niah_single_1", "vt"], lengths="4k", samples=3,
                         out=data, workers=1)
    assert report.out == data and report.config == "gpt-4" and len(report.files) == 2
    rows = ruler.load(data, length=4096)  # the folder's only config
    assert len(rows) == 6 and set(rows["task"]) == {"niah_single_1", "vt"}
    assert len(ruler.load(data, "gpt-4", 4096, task="vt")) == 3
    assert ruler.verify(data).ok
    outcome = ruler.evaluate("fake", data, backend="fake", model_tokenizer="gpt-4",
                             out=tmp_path / "results", no_report=True)
    assert (outcome.generated, outcome.errors) == (6, 0)
    scores = ruler.score(outcome.out / "predictions.jsonl", data)
    assert scores.complete and {c.score for c in scores.cells} == {100.0}
    assert (outcome.out / "predictions.jsonl.scores" / "scores.json").is_file()


def test_options_are_checked_as_the_commands_check_them(tmp_path):
    with pytest.raises(RulerError, match="ruler eval --help"):
        ruler.evaluate("m", tmp_path, backend="no-such-backend")
    with pytest.raises(RulerError, match="unknown task"):
        ruler.build("gpt-4", tasks="no_such_task", out=tmp_path / "x")
    with pytest.raises(TypeError):
        ruler.build("gpt-4", no_such_option=1, out=tmp_path / "x")
    with pytest.raises(RulerError, match="no_such_folder|does not exist|not found"):
        ruler.load(tmp_path / "no_such_folder", "gpt-4")


@pytest.mark.build
def test_a_keyword_a_function_does_not_take_is_one_line_naming_it(tmp_path):
    """The docs say keywords are checked (getting-started.md): an unknown one is a RulerError
    naming it and the ones the function takes (still a TypeError, as Python's own);
    `no_progress`, as the flag spells it, is taken by `build` too (it was passed into
    BuildConfig: TypeError) (issue 30.15f)."""
    data = tmp_path / "data"
    report = ruler.build("gpt-4", tasks="niah_single_1", lengths="1k", samples=1, out=data,
                         workers=1, no_progress=True)
    assert report.config == "gpt-4" and len(report.files) == 1
    for call, name, takes in (
            (lambda: ruler.build("gpt-4", out=data, no_such_option=1), "no_such_option",
             "seed"),
            (lambda: ruler.verify(data, no_such_check=True), "no_such_check", "regenerate"),
            (lambda: ruler.evaluate("fake", data, backend="fake", limt=2), "limt", "limit"),
            (lambda: ruler.score(data / "p.jsonl", data, strictly=True), "strictly", "strict")):
        with pytest.raises(RulerError, match=f"unknown keyword.*{name}.*takes.*{takes}") as e:
            call()
        assert isinstance(e.value, TypeError) and "\n" not in str(e.value)
    with pytest.raises(RulerError, match="--limit: invalid int value"):
        ruler.evaluate("fake", data, backend="fake", limit="two")
