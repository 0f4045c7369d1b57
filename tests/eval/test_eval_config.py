"""`EvalConfig` and the backends' options check themselves (issue 33.2): each check in one
place, made however the config is (the command, `ruler.evaluate`, code calling the runner),
and the config holds its backend's own typed options, settled once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ruler
from ruler.benchmarks.ruler2.tasks import TASKS as RULER2_TASKS
from ruler.builder.pipeline.config import BuildConfig
from ruler.catalog.family import swept_tasks
from ruler.catalog.variants import DepthSweep
from ruler.eval.backends import BackendOptions
from ruler.eval.backends.fake import FakeOptions
from ruler.eval.backends.openai import OpenAIOptions
from ruler.eval.backends.vllm import VLLMOptions
from ruler.eval.runner import EvalConfig, run_eval
from ruler.kernel.errors import RulerError


def _cfg(**kw) -> EvalConfig:
    return EvalConfig(**{"model": "org/model-7b", "data": "d", "tokenizer_config": None,
                         "out": Path("r"), **kw})


def test_the_config_holds_its_backends_own_options_settled_once():
    assert _cfg().backend_options == VLLMOptions("org/model-7b")  # vllm, the default
    assert EvalConfig(model="org/model-7b", data="d").out == Path("results/model-7b")
    kept = _cfg(backend_options=BackendOptions("org/model-7b", max_model_len=8192))
    assert kept.backend_options == VLLMOptions("org/model-7b", max_model_len=8192)
    assert _cfg(**{**kept.__dict__}) == kept  # settled options are taken as they are
    fake = _cfg(backend="fake", revision="v1")
    assert fake.backend_options == FakeOptions("org/model-7b", data="d", revision="v1")
    with pytest.raises(RulerError, match="backend_options are VLLMOptions, not the FakeOptions"):
        _cfg(backend="fake", backend_options=VLLMOptions("org/model-7b"))
    with pytest.raises(RulerError, match="backend_options are for model 'other'"):
        _cfg(backend_options=BackendOptions("other"))


def test_each_check_is_made_by_the_options_themselves():
    """`--api` was checked by the openai flags and again by the backend's constructor; the
    options type is now the one place, whoever makes them."""
    with pytest.raises(RulerError, match="--api must be one of completions-ids"):
        OpenAIOptions("m", api="completion")
    with pytest.raises(RulerError, match="--answer-prefix-turn .* needs --api chat"):
        OpenAIOptions("m", answer_prefix_turn="user")
    with pytest.raises(RulerError, match="--concurrency must be <= 256, got 257"):
        OpenAIOptions("m", concurrency=257)
    with pytest.raises(RulerError, match="--timeout must be > 0, got 0"):
        OpenAIOptions("m", timeout=0.0)
    with pytest.raises(RulerError, match="--fake-answers must be one of gold, empty, none"):
        FakeOptions("m", answers="some")
    with pytest.raises(RulerError, match="--tensor-parallel-size must be >= 1, got 0"):
        VLLMOptions("m", tensor_parallel_size=0)


def test_a_run_is_checked_whoever_makes_it(tmp_path):
    with pytest.raises(RulerError, match="--backend openai renders prompts locally: pass "
                                         "--model-tokenizer"):
        _cfg(backend="openai")
    assert _cfg(backend="openai", model_tokenizer="gpt-4").backend_options == \
        OpenAIOptions("org/model-7b")
    with pytest.raises(RulerError, match="--limit must be >= 1, got 0"):
        _cfg(limit=0)
    with pytest.raises(RulerError, match="--mode must be one of chat, base, reasoning"):
        _cfg(mode="thinking")
    with pytest.raises(RulerError, match="unknown backend 'nope'"):
        _cfg(backend="nope")


@pytest.mark.build
def test_the_fake_backend_runs_from_the_config_alone(built_gpt4_niah_single, tmp_path):
    """Its gold answers come from the run's dataset, which the config gives its options (the
    runner used to make plain options without it: 'pass FakeOptions(model, data=...)')."""
    out = tmp_path / "r"
    outcome = run_eval(EvalConfig(model="fake", data=str(built_gpt4_niah_single),
                                  tokenizer_config=None, out=out, backend="fake",
                                  progress=False, render_workers=0))
    assert (outcome.generated, outcome.errors) == (2, 0)
    cells = json.loads((out / "scores.json").read_text())["cells"]
    assert [c["score"] for c in cells] == [100.0]


@pytest.mark.build
@pytest.mark.subprocess
def test_evaluate_writes_the_report_unless_told_not_to(built_gpt4_niah_single, tmp_path):
    """`ruler.evaluate` does what `ruler eval` does with `--no-report` as a keyword: its
    docstring promised the report in `.out`, and `no_report` was taken and ignored."""
    data = built_gpt4_niah_single
    with_report = ruler.evaluate("fake", data, backend="fake", out=tmp_path / "a")
    assert (with_report.out / "report.md").is_file()
    assert (with_report.out / "scores_by_task.png").is_file()
    without = ruler.evaluate("fake", data, backend="fake", out=tmp_path / "b", no_report=True)
    assert (without.out / "scores.json").is_file() and not (without.out / "report.md").exists()
    bare = ruler.evaluate("fake", data, backend="fake", out=tmp_path / "c", no_plots=True)
    assert (bare.out / "report.md").is_file() and not list(bare.out.rglob("*.png"))


def test_a_builds_default_tasks_are_its_benchmarks_and_its_variants():
    """The CLI's default ("all": the variant's tasks, or the benchmark's) is BuildConfig's, so
    `ruler.build` and code making a BuildConfig get it too (a depth sweep asked for vt, cwe
    and fwe and was refused; a v2 build asked for RULER's tasks)."""
    assert BuildConfig(tokenizer="gpt-4", variant=DepthSweep(4)).tasks == swept_tasks()
    v2 = BuildConfig(tokenizer="gpt-4", benchmark="v2")
    assert (v2.benchmark, v2.tasks) == ("ruler2", RULER2_TASKS)
