"""The backend table: the fake backend that ships, run from the command line on a real build
(gold answers score 100, empty ones 0, none fail their rows), and a backend registered from
outside the package (this file) that `ruler eval` lists, offers the flags of and runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.builds import build, rows
from ruler.commands.main import main
from ruler.eval.backends import (
    BackendOptions,
    BackendSpec,
    GenResult,
    backend_names,
    get_backend,
    register_backend,
    unregister_backend,
)
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.backends.registry import BACKENDS
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import option

CONFIG = "gpt-4"
TASKS = ("niah_single_1", "qa_1")
L = 4096


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, CONFIG, TASKS, (L,), samples=3, workers=1)
    return out


def _eval(data: Path | str, out: Path, *extra: str, backend: str = "fake") -> int:
    return main(["eval", "--backend", backend, "--model", backend, "--model-tokenizer", CONFIG,
                 "--data", str(data), "--out", str(out), "--no-progress", "--no-report",
                 "--render-workers", "0", *extra])


def _records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def _report(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


# --- the fake backend, from the command line ---------------------------------------------------

@pytest.mark.build
def test_the_fake_backends_gold_answers_score_100(data, tmp_path):
    out = tmp_path / "gold"
    assert _eval(data, out) == 0
    records = _records(out)
    assert len(records) == 6 and {(r["status"], r["backend"]) for r in records} == {("ok", "fake")}
    gold = {(t, r["index"]): " ".join(r["outputs"])
            for t in TASKS for r in rows(data, CONFIG, t, L)}
    assert {(r["task"], r["index"]): r["prediction"] for r in records} == gold
    scores = json.loads((out / "scores.json").read_text())
    assert [(c["task"], c["score"], c["scored"]) for c in scores["cells"]] == \
        [(t, 100.0, 3) for t in TASKS]
    # `ruler score` of the same predictions agrees, with the headline figures
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--strict", "--no-plots"]) == 0
    report = _report(out / "predictions.jsonl.scores")
    assert report["complete"] and (report["avg"], report["effective_length"]) == (100.0, L)


@pytest.mark.build
def test_the_fake_backend_needs_no_model_tokenizer(data, tmp_path, capsys):
    """`--backend fake --model fake`, as docs/evaluating.md calls it "no model": the prompts are
    rendered with the dataset config's tokenizer (issue 30.12); --model-tokenizer still
    overrides it, and the counts check still holds it to the build."""
    out = tmp_path / "no-model"
    assert main(["eval", "--backend", "fake", "--model", "fake", "--data", str(data), "--out",
                 str(out), "--no-progress", "--no-report", "--render-workers", "0"]) == 0
    scores = json.loads((out / "scores.json").read_text())
    assert [(c["task"], c["score"], c["scored"]) for c in scores["cells"]] == \
        [(t, 100.0, 3) for t in TASKS]
    capsys.readouterr()
    assert main(["eval", "--backend", "fake", "--model", "fake", "--model-tokenizer", "qwen2.5",
                 "--data", str(data), "--out", str(tmp_path / "other-tokenizer"),
                 "--no-progress", "--no-report", "--render-workers", "0"]) == 2
    assert "qwen2.5" in capsys.readouterr().err  # its counts differ from the build's


@pytest.mark.build
def test_eval_prints_the_headline_and_where_the_report_is(data, tmp_path, capsys):
    """Not the whole report (257 lines for a full run): the headline numbers and every task x
    length's score, the status line, and where report.md is (issue 30.15c)."""
    out = tmp_path / "headline"
    capsys.readouterr()
    assert main(["eval", "--backend", "fake", "--model", "fake", "--data", str(data), "--out",
                 str(out), "--no-progress", "--render-workers", "0", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert not list(out.rglob("*.png"))
    for section in ("## Rows: answered", "## Coverage", "## Score by depth"):
        assert section in report and section not in printed, section
    assert "| Effective length |" in printed and "## Scores per task" in printed
    assert all(f"| {t} | 100.00" in printed for t in TASKS)
    assert "complete: 6 of 6 rows asked for have a result" in printed
    assert f"full report: {out / 'report.md'} (rows, coverage, notes and score by depth; " \
           f"also report.csv, report.json)" in printed
    assert len(printed.splitlines()) < len(report.splitlines())


@pytest.mark.build
def test_the_fake_backends_empty_answers_score_0_and_the_rows_are_answered(data, tmp_path):
    out = tmp_path / "empty"
    assert _eval(data, out, "--fake-answers", "empty") == 0
    assert {(r["status"], r["prediction"]) for r in _records(out)} == {("ok", "")}
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--strict", "--no-plots"]) == 0
    report = _report(out / "predictions.jsonl.scores")
    assert report["complete"] and report["avg"] == 0.0
    assert report["scores"] == {t: {str(L): 0.0} for t in TASKS}


@pytest.mark.build
def test_the_fake_backends_missing_answers_are_failed_rows_and_no_headline(data, tmp_path,
                                                                          capsys):
    out = tmp_path / "none"
    assert _eval(data, out, "--fake-answers", "none") == 1  # failed requests: exit 1
    assert "6 request(s) failed" in capsys.readouterr().err
    records = _records(out)
    assert {r["status"] for r in records} == {"error"}
    assert all(r["prediction"] is None and "--fake-answers none" in r["reason"] for r in records)
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--strict", "--no-plots"]) == 1
    assert "PARTIAL" in capsys.readouterr().out
    report = _report(out / "predictions.jsonl.scores")
    assert not report["complete"]
    assert (report["avg"], report["effective_length"], report["wavg_inc"]) == (None,) * 3
    assert sorted(report["incomplete_cells"]) == [f"{t}/{L}" for t in TASKS]


@pytest.mark.build
def test_the_fake_backend_skips_rows_above_max_model_len_like_an_engine(data, tmp_path):
    out = tmp_path / "short"
    lengths = sorted(r["length"] for t in TASKS for r in rows(data, CONFIG, t, L))
    assert _eval(data, out, "--max-model-len", str(lengths[2])) == 0
    statuses = sorted(r["status"] for r in _records(out))
    assert statuses == ["ok"] * 3 + ["skipped"] * 3


@pytest.mark.build
@pytest.mark.network
def test_the_fake_backend_reads_a_hub_dataset_at_the_runs_revision(data, tmp_path,
                                                                    monkeypatch):
    """Released, then main moves on without the rows: the fake reads the references of the
    rows asked for (only those files) at the tag's commit, as the run does."""
    from helpers.fake_hub import hub_for_this_process
    from ruler.release import release

    repo = "ruler-org/fake-backend"
    with hub_for_this_process(tmp_path, "hf_loopbackSecretToken123", monkeypatch) as hub:
        release(data, repo, tag="v1", allow_unofficial=True, echo=lambda *a: None)
        tagged = hub.repos[repo].head.sha
        hub.apply_commit(hub.repos[repo], "later", {"README.md": b"moved on"}, ["data/"])
        hub.requests.clear()
        out = tmp_path / "hub-run"
        assert _eval(repo, out, "--revision", "v1", "--tasks", "qa_1") == 0
        fetched = [p for _, p in hub.requests if "/data/" in p]
    scores = json.loads((out / "scores.json").read_text())
    assert [(c["task"], c["score"], c["scored"]) for c in scores["cells"]] == [("qa_1", 100.0, 3)]
    assert fetched and all(f"/{tagged}/data/{CONFIG}/qa_1/{L}.parquet" in p for p in fetched)


def test_the_fake_backends_gold_answers_need_the_dataset():
    with pytest.raises(RulerError, match="data="):
        FakeBackend(BackendOptions("m"))  # what run_eval makes when given no options
    assert FakeBackend(FakeOptions("m", answers="empty")).max_model_len > 1 << 30


# --- a backend registered from outside the package -----------------------------------------------

@dataclass(frozen=True)
class ToyOptions(BackendOptions):
    word: str = option("--toy-word", default="toy", help="the toy's one word")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.word.strip():
            raise RulerError("--toy-word must not be blank")


class ToyBackend:
    """Answers every row with one word, and says how long the prompt was."""

    name = "toy"

    def __init__(self, opts: BackendOptions):
        self.opts = opts
        self.max_model_len = opts.max_model_len or 1 << 20

    def generate(self, requests):
        for r in requests:
            yield GenResult(r.key, f"{self.opts.word} {len(r.prompt_ids)}", 2, "stop")

    def close(self):
        pass


TOY = BackendSpec(name="toy", factory=ToyBackend, summary="a test's own backend",
                  options_type=ToyOptions)
MISSING = BackendSpec(name="toy-gpu", factory=ToyBackend, requirement="no_such_engine_ruler",
                      install_hint="--backend toy-gpu needs no_such_engine_ruler: pip install it")


@pytest.fixture
def toys():
    for spec in (TOY, MISSING):
        register_backend(spec)
    yield
    for spec in (TOY, MISSING):
        unregister_backend(spec.name)


def test_a_backend_registered_outside_the_package_is_offered_with_its_flags(toys, capsys,
                                                                            monkeypatch):
    # after ruler's own (an installed plug-in's may be anywhere among them: issue 40.27)
    assert BACKENDS.builtin_names() == ("vllm", "openai", "hf", "fake", "toy", "toy-gpu")
    assert get_backend("toy") is TOY
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at the terminal's width
    with pytest.raises(SystemExit) as e:
        main(["eval", "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"{{{','.join(backend_names())}}}" in text
    assert "toy: a test's own backend" in text
    assert "--backend toy: --toy-word TOY_WORD the toy's one word" in text
    with pytest.raises(ValueError, match="registered already"):
        register_backend(BackendSpec(name="toy", factory=ToyBackend))


@pytest.mark.build
def test_a_registered_backend_evaluates_and_scores(toys, data, tmp_path, capsys):
    out = tmp_path / "toy"
    assert _eval(data, out, "--toy-word", "Paris", backend="toy") == 0
    records = _records(out)
    assert len(records) == 6 and {r["backend"] for r in records} == {"toy"}
    assert all(r["prediction"] == f"Paris {r['prompt_tokens']}" for r in records)
    assert json.loads((out / "run.json").read_text())["backend"] == "toy"
    assert main(["score", "--predictions", str(out / "predictions.jsonl"), "--data", str(data),
                 "--strict", "--no-plots"]) == 0
    assert _report(out / "predictions.jsonl.scores")["complete"]
    # its own checks run as the CLI's do: one line, exit 2, nothing written
    capsys.readouterr()
    assert _eval(data, tmp_path / "blank", "--toy-word", " ", backend="toy") == 2
    assert capsys.readouterr().err.strip() == "ruler: error: --toy-word must not be blank"
    # a backend whose engine is not installed says how to get it, before any work
    assert _eval(data, tmp_path / "gpu", backend="toy-gpu") == 2
    err = capsys.readouterr().err.strip()
    assert err == "ruler: error: --backend toy-gpu needs no_such_engine_ruler: pip install it"
    assert not (tmp_path / "blank").exists() and not (tmp_path / "gpu").exists()


@pytest.mark.build
def test_an_unknown_backend_is_refused_by_the_library_too(data, tmp_path):
    from ruler.eval.runner import EvalConfig, run_eval

    with pytest.raises(RulerError, match="unknown backend 'nope'; choose one of vllm, openai"):
        run_eval(EvalConfig(model="m", data=str(data), tokenizer_config=CONFIG,
                            out=tmp_path / "r", backend="nope", model_tokenizer=CONFIG,
                            progress=False, render_workers=0))
    assert not (tmp_path / "r").exists()


@pytest.mark.build
def test_a_product_backends_own_checks_run_before_any_work(data, tmp_path, capsys):
    """openai renders prompts locally: without a tokenizer to render with it refuses at once
    (the check moved from the CLI into the backend's options)."""
    out = tmp_path / "r"
    assert main(["eval", "--backend", "openai", "--model", "served-model", "--data", str(data),
                 "--out", str(out)]) == 2
    assert "--backend openai renders prompts locally: pass --model-tokenizer" in \
        capsys.readouterr().err
    assert main(["eval", "--backend", "vllm", "--model", "m", "--data", str(data), "--out",
                 str(out), "--window-tokens", "0"]) == 2
    assert "--window-tokens must be >= 1, got 0" in capsys.readouterr().err
    assert not out.exists()
