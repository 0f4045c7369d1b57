"""Resuming `ruler eval` with other settings, and what `ruler eval` assumes when not told:
rows skipped as too long are tried again when the context limit allows; another backend is
recorded and said; a run that fails before generating does not pin its folder; the dataset's
only config is the default one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.fake_openai import MODEL, FakeServer
from ruler.commands.main import main, make_parser
from ruler.eval.backends import DEFAULT_BACKEND, BackendOptions, backend_names
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.runner import EvalConfig, run_eval
from ruler.kernel.errors import RulerError

CONFIG = "qwen2.5"
TASKS = ("niah_single_1", "vt")


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # CONFIG: TASKS x 1024 x 4 samples (conftest; read only)


@pytest.fixture(scope="module")
def two_configs(data, tmp_path_factory) -> Path:
    two = tmp_path_factory.mktemp("two") / "data"
    shutil.copytree(data, two)
    build(two, "llama-3.1", ("niah_single_1",), (1024,), samples=2, workers=1)
    return two


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def _last(out: Path) -> dict[tuple, dict]:
    return {(r["task"], r["index"]): r for r in _records(out)}


def _args(data: Path, out: Path, url: str, *extra: str,
          config: str | None = CONFIG) -> list[str]:
    return ["eval", "--model", MODEL, "--model-tokenizer", CONFIG, "--data", str(data),
            *(["--tokenizer-config", config] if config else []),
            "--backend", "openai", "--base-url", url, "--out", str(out), "--no-progress",
            "--no-report", "--render-workers", "0", *extra]


@pytest.mark.build
@pytest.mark.network
def test_rows_skipped_for_max_model_len_are_retried_when_the_limit_allows(data, tmp_path,
                                                                         capsys):
    lengths = [r["length"] for t in TASKS for r in rows(data, CONFIG, t, 1024)]
    low = min(lengths)
    too_long = sum(n > low for n in lengths)
    assert too_long > 0
    out = tmp_path / "r"
    with FakeServer(max_model_len=4096) as server:
        def requests() -> int:
            return sum(server.attempts.values())

        assert main(_args(data, out, server.url, "--max-model-len", str(low))) == 0
        assert sum(r["status"] == "skipped" for r in _records(out)) == too_long
        assert requests() == len(lengths) - too_long

        # The same limit again: nothing to retry, and no engine is needed for it.
        assert main(_args(data, out, "http://127.0.0.1:9/v1", "--max-model-len", str(low))) == 0

        # A raised limit: exactly the skipped rows run now.
        capsys.readouterr()
        assert main(_args(data, out, server.url, "--max-model-len", "4096")) == 0
        assert f"{too_long} row(s) skipped earlier for max_model_len tried again" in \
            capsys.readouterr().out
        assert requests() == len(lengths)
        assert all(r["status"] == "ok" for r in _last(out).values())
        assert len(_last(out)) == len(lengths)
        cells = json.loads((out / "scores.json").read_text())["cells"]
        assert sum(c["skipped"] for c in cells) == 0
        assert sum(c["scored"] for c in cells) == len(lengths)

        # Done: nothing left, whatever the limit.
        assert main(_args(data, out, server.url)) == 0
        assert requests() == len(lengths)


@pytest.mark.build
@pytest.mark.network
def test_without_max_model_len_the_engines_own_limit_decides_which_skips_run(data, tmp_path):
    """A run limited by --max-model-len, resumed without it: the server's limit applies, and
    the skipped rows that fit it run. Resumed again without it: the same limit as last time,
    so rows still too long are not tried (no engine is started for them)."""
    lengths = [r["length"] for t in TASKS for r in rows(data, CONFIG, t, 1024)]
    low = min(lengths)
    mid = sorted(lengths)[len(lengths) // 2]
    out = tmp_path / "r"
    with FakeServer(max_model_len=mid) as server:
        assert main(_args(data, out, server.url, "--max-model-len", str(low))) == 0
        assert main(_args(data, out, server.url)) == 0
        fit = sum(n <= mid for n in lengths)
        assert sum(server.attempts.values()) == fit
        assert sum(r["status"] == "ok" for r in _last(out).values()) == fit
        # The server's limit is the one recorded: the rest are not tried again (no server).
        assert main(_args(data, out, "http://127.0.0.1:9/v1")) == 0
    still = [r for r in _last(out).values() if r["status"] == "skipped"]
    assert len(still) == len(lengths) - fit
    assert all(f"> max_model_len {mid}" in r["reason"] for r in still)


class NamedBackend(FakeBackend):
    """The fake engine under another backend's name, counting its calls; interrupted after
    `stop_after`."""

    def __init__(self, name: str, max_model_len: int | None = None,
                 stop_after: int | None = None):
        super().__init__(FakeOptions(MODEL, max_model_len, answers="empty"))
        self.name, self.stop_after, self.calls = name, stop_after, 0

    def answer(self, request):
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise KeyboardInterrupt  # an interrupted run
        self.calls += 1
        return super().answer(request)


@pytest.mark.build
def test_a_changed_backend_is_recorded_and_said(data, tmp_path):
    out = tmp_path / "r"

    def cfg(backend: str) -> EvalConfig:
        return EvalConfig(model=MODEL, data=str(data), tokenizer_config=CONFIG, out=out,
                          backend=backend, model_tokenizer=CONFIG, progress=False,
                          render_workers=0)

    with pytest.raises(KeyboardInterrupt):
        run_eval(cfg("hf"), backend=NamedBackend("hf", stop_after=3))
    outcome = run_eval(cfg("openai"), backend=NamedBackend("openai"))
    assert outcome.generated == 5 and outcome.done_before == 3
    assert len(outcome.notes) == 1
    assert "backend(s) hf" in outcome.notes[0] and "backend openai" in outcome.notes[0]
    run = json.loads((out / "run.json").read_text())
    assert run["backend"] == "openai" and run["backends"] == ["hf", "openai"]
    assert sorted(r["backend"] for r in _records(out)) == ["hf"] * 3 + ["openai"] * 5
    # The same backend again: nothing to say.
    assert run_eval(cfg("openai"), backend=NamedBackend("openai")).notes == []


@pytest.mark.build
@pytest.mark.network
def test_a_run_that_fails_before_generating_does_not_pin_the_folder(data, tmp_path, capsys):
    """The engine cannot be reached: no run.json is left, so the next run may use other
    settings (here another --limit) in the same folder."""
    out = tmp_path / "r"
    assert main(_args(data, out, "http://127.0.0.1:9/v1", "--limit", "2")) == 2
    assert "cannot reach the OpenAI-compatible server" in capsys.readouterr().err
    assert not out.exists()
    with FakeServer() as server:
        assert main(_args(data, out, server.url, "--limit", "3")) == 0
    assert len(_records(out)) == 6
    # An existing folder keeps its run record when a resumed run fails before generating.
    before = (out / "run.json").read_text()
    assert main(_args(data, out, "http://127.0.0.1:9/v1")) == 2
    assert (out / "run.json").read_text() == before


@pytest.mark.build
@pytest.mark.network
def test_a_larger_limit_extends_a_folder_and_a_smaller_one_is_refused(data, tmp_path, capsys):
    """Try a few rows, then more: --limit 2 then --limit 3 in one folder sends only the third
    row of each file and scores the three; --limit 1 afterwards would score a subset."""
    out = tmp_path / "r"
    with FakeServer() as server:
        assert main(_args(data, out, server.url, "--limit", "2")) == 0
        assert main(_args(data, out, server.url, "--limit", "3")) == 0
        assert len(server.bodies) == 3 * len(TASKS)  # each row sent once
        assert main(_args(data, out, server.url, "--limit", "1")) == 2
        assert "holds a run with limit 3, not 1 (a smaller --limit would score a subset " \
               "of its rows)" in capsys.readouterr().err
        assert main(_args(data, out, server.url)) == 0  # all rows: the fourth now
        assert len(server.bodies) == 4 * len(TASKS)
    assert sorted((r["task"], r["index"]) for r in _records(out)) == \
        sorted((t, i) for t in TASKS for i in range(4))
    scores = json.loads((out / "scores.json").read_text())
    assert scores["selection"]["limit"] is None
    assert [c["rows"] for c in scores["cells"]] == [4] * len(TASKS)
    assert scores["coverage"]["complete"] and scores["coverage"]["done"] == 4 * len(TASKS)


def test_eval_help_names_the_backends_and_the_default(monkeypatch):
    # wide enough that a long backend name (an installed plug-in's) is not cut at its hyphen
    monkeypatch.setenv("COLUMNS", "1000")
    text = make_parser()._subparsers._group_actions[0].choices["eval"].format_help()
    assert f"one of {', '.join(backend_names())} (default: {DEFAULT_BACKEND})" in \
        " ".join(text.split())
    assert "default: the dataset's only config" in " ".join(text.split())


@pytest.mark.build
@pytest.mark.network
def test_the_only_config_is_the_default_and_several_are_listed(data, two_configs, tmp_path,
                                                              capsys):
    with FakeServer() as server:
        assert main(_args(data, tmp_path / "r", server.url, "--limit", "1", config=None)) == 0
    assert json.loads((tmp_path / "r" / "run.json").read_text())["dataset"]["config"] == CONFIG

    assert main(_args(two_configs, tmp_path / "r2", "http://127.0.0.1:9/v1",
                      config=None)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--tokenizer-config" in err
    assert "llama-3.1, qwen2.5" in err
    assert not (tmp_path / "r2").exists()


@pytest.mark.build
def test_a_hub_dataset_of_several_configs_is_refused_before_any_download(two_configs,
                                                                        monkeypatch):
    import huggingface_hub

    from ruler.eval.records.dataset import open_dataset

    downloads = []

    class Api:
        def dataset_info(self, repo, revision=None):
            return type("Info", (), {"sha": "c0ffee"})()

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda *a, **k: str(two_configs / "manifest.json"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda *a, **k: downloads.append(k) or str(two_configs))
    with pytest.raises(RulerError, match="2 tokenizer configs.*llama-3.1, qwen2.5"):
        open_dataset("org/ruler", None, None, one_config=True)
    assert downloads == []


@pytest.mark.build
def test_a_raised_limit_passed_to_run_eval_reruns_skips(data, tmp_path):
    """The same through the library: BackendOptions.max_model_len is the flag."""
    lengths = [r["length"] for t in TASKS for r in rows(data, CONFIG, t, 1024)]
    low = min(lengths)
    out = tmp_path / "r"

    def cfg(limit: int) -> EvalConfig:
        return EvalConfig(model=MODEL, data=str(data), tokenizer_config=CONFIG, out=out,
                          model_tokenizer=CONFIG, progress=False, render_workers=0,
                          backend_options=BackendOptions(MODEL, max_model_len=limit))

    first = run_eval(cfg(low), backend=NamedBackend("vllm", max_model_len=low))
    assert first.skipped == sum(n > low for n in lengths)
    second = NamedBackend("vllm", max_model_len=4096)
    outcome = run_eval(cfg(4096), backend=second)
    assert (outcome.retried_skipped, outcome.generated, second.calls) == (first.skipped,) * 3
