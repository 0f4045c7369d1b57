"""The report's set-up health section: counted from a run's own predictions and run record, each
problem named with its fix. Deliberately broken runs on real builds: a server run with answers
capped at 8 tokens (--max-tokens 8) and another chat template than the build's, accepted with
--allow-length-mismatch and --allow-prompt-mismatch; a reasoning run with a thinking budget of
16 tokens. A sound fake-backend run is all "ok"; an older scores.json says it has no record.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers.builds import build
from helpers.declared import forget_declared_tasks  # noqa: F401 (autouse)
from helpers.fake_openai import MODEL, FakeServer
from helpers.reasoning import thinking_tokenizer
from ruler.catalog.declared import declare
from ruler.catalog.variants import OutputBudget
from ruler.commands.main import main
from ruler.eval.backends import GenResult
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.metrics.health import REFUSAL_PATTERNS, flags, health_facts, is_refusal
from ruler.eval.report.run import to_json, to_markdown, write_report
from ruler.eval.runner import EvalConfig, run_eval

CONFIG = "qwen2.5"


@pytest.fixture(scope="module")
def data(built_qwen_niah_vt) -> Path:
    return built_qwen_niah_vt  # qwen2.5: niah_single_1, vt x 1024 x 4 samples (read only)


def _other_template(dest: Path) -> Path:
    """The pinned qwen2.5 tokenizer with a chat template that opens with a line of its own."""
    source = Path(os.environ["RULER_TOKENIZERS"]) / CONFIG
    dest.mkdir(parents=True)
    shutil.copyfile(source / "tokenizer.json", dest / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = "{{- 'Answer briefly.\\n' -}}" + config["chat_template"]
    (dest / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return dest


def _section(md: str) -> str:
    return md.split("## Set-up health", 1)[1].split("\n## ", 1)[0]


@pytest.mark.build
@pytest.mark.subprocess
def test_a_sound_run_is_healthy(data, tmp_path, capsys):
    out = tmp_path / "ok"
    assert main(["eval", "--backend", "fake", "--model", CONFIG, "--data", str(data),
                 "--out", str(out), "--no-progress", "--no-report"]) == 0
    md = to_markdown(write_report(out, plots=False))
    health = _section(md)
    for check in ("Generation settings", "Answers cut at the budget", "Empty answers",
                  "Refusals", "Chat template"):
        assert f"| {check} | ok |" in health, check
    assert "problem" not in health
    run = json.loads((out / "run.json").read_text())
    assert run["max_tokens"] is None and run["prompt_template"]["sha256"] == \
        run["prompt_template"]["build_sha256"]


@pytest.mark.build
@pytest.mark.network
@pytest.mark.subprocess
def test_a_broken_server_run_names_each_problem_with_its_fix(data, tmp_path):
    """Answers capped at 8 tokens (the server ends them with finish_reason length), a chat
    template other than the build's (rows longer than the build counted: allowed), and a
    server that counts every prompt one token longer (allowed): each is a problem in the
    health section with what to do."""
    def cut(body, reply):
        if body.get("max_tokens", 0) <= 8:
            reply["choices"][0]["finish_reason"] = "length"
        return reply

    out = tmp_path / "broken"
    tokenizer = _other_template(tmp_path / "other-template")
    with FakeServer(prompt_tokens=lambda body: len(body["prompt"]) + 1, shape=cut) as server:
        assert main(["eval", "--model", MODEL, "--model-tokenizer", str(tokenizer),
                     "--data", str(data), "--tokenizer-config", CONFIG, "--backend", "openai",
                     "--base-url", server.url, "--out", str(out), "--no-progress",
                     "--max-tokens", "8", "--allow-length-mismatch",
                     "--allow-prompt-mismatch", "--no-report"]) == 0
    assert {b["max_tokens"] for b in server.bodies} == {8}
    r = write_report(out, plots=False)
    health = _section(to_markdown(r))
    assert "| Generation settings | **problem** | output capped below RULER's budget at 8 " \
           "token(s) for niah, vt (RULER: niah 128, vt 30). |" in health
    assert "| Answers cut at the budget | **problem** | 8 of 8 answered row(s) ended with " \
           "finish_reason `length` (niah_single_1 4, vt 4). |" in health
    assert "answers cut at 8 token(s) for niah, vt (RULER: niah 128, vt 30): " in health
    # the tasks cut whose answer is a list (`FamilySpec.list_answer`), from the rows' families
    assert "list answers (vt) need their full budgets" in health
    assert "| Prompt counts | **problem** | 8 answered row(s) ran on a prompt the server " \
           "counted otherwise than the build (niah_single_1 4, vt 4), kept by " \
           "--allow-prompt-mismatch. |" in health
    assert "Serve the model with the build tokenizer's chat template" in health
    assert "| Chat template | **problem** | the prompts were rendered with chat template" in health
    assert "Render with the tokenizer the config was built for" in health
    assert "without --max-tokens" in health
    data_json = to_json(r)["health"]
    assert data_json["max_tokens"] == 8 and data_json["cut_at_budget"] == {"niah_single_1": 4,
                                                                           "vt": 4}
    assert {f["check"] for f in data_json["flags"] if f["status"] == "problem"} == {
        "Generation settings", "Answers cut at the budget", "Prompt counts", "Chat template"}


class _Thinking(FakeBackend):
    """An engine that is still thinking when a small output budget runs out."""

    def __init__(self):
        super().__init__(FakeOptions("thinking", answers="empty"))

    def answer(self, request):
        return GenResult(request.key, "Let me count the words one by one", request.max_tokens,
                         "length")


@pytest.mark.build
def test_a_thinking_budget_of_16_is_named_with_its_fix(tmp_path):
    think = thinking_tokenizer(Path(os.environ["RULER_TOKENIZERS"]) / CONFIG,
                               tmp_path / "qwen-think")
    data = tmp_path / "data"
    build(data, str(think), ("niah_single_1",), (1024,), samples=2, workers=1,
          variant=OutputBudget(16))
    out = tmp_path / "run"
    run_eval(EvalConfig(model=str(think), data=str(data), tokenizer_config="qwen-think--out16",
                        out=out, progress=False, render_workers=0), backend=_Thinking())
    health = _section(to_markdown(write_report(out, plots=False)))
    assert "| Reasoning out of budget | **problem** | 2 row(s) still thinking when the output " \
           "budget (16 tokens) ran out (niah_single_1 2): scored as empty answers (0). |" \
           in health
    assert "--output-budget 16384" in health and "enable_thinking" in health


def test_facts_from_records_refusals_empty_and_skipped():
    records = [
        {"tokenizer": "c", "task": "qa_1", "max_seq_length": 4096, "index": 0,
         "prediction": "I'm sorry, I cannot help with that.", "finish_reason": "stop"},
        {"tokenizer": "c", "task": "qa_1", "max_seq_length": 4096, "index": 1,
         "prediction": "  ", "finish_reason": "stop"},
        {"tokenizer": "c", "task": "qa_2", "max_seq_length": 4096, "index": 0,
         "prediction": "The answer is not mentioned in the provided documents."},
        {"tokenizer": "c", "task": "qa_2", "max_seq_length": 8192, "index": 1,
         "prediction": None, "status": "skipped",
         "reason": "prompt 8170 + tokens_to_generate 32 = 8202 > max_model_len 8192"},
        {"tokenizer": "c", "task": "qa_2", "max_seq_length": 8192, "index": 2,
         "prediction": None, "status": "error", "reason": "HTTP 500"},
    ]
    h = health_facts(records, {"framework": "lm-eval", "mode": "chat"})
    assert (h.refusals, h.empty, h.skipped_context, h.failed) == (
        {"qa_1": 1, "qa_2": 1}, {"qa_1": 1}, {"qa_2": 1}, {"qa_2": 1})
    assert h.examples["refusals"] == ["c/qa_1/4096#0", "c/qa_2/4096#0"]
    found = {f.check: f for f in flags(h)}
    assert found["Refusals"].status == "check" and found["Empty answers"].status == "problem"
    assert found["Skipped for the context limit"].fix.startswith("Raise --max-model-len")
    assert found["Generation settings"].status == "check"  # lm-eval without its settings
    assert found["Chat template"].finding == "not recorded with these predictions."
    assert len(REFUSAL_PATTERNS) == 5 and not is_refusal("The special magic number is 42.")


@pytest.mark.build
@pytest.mark.subprocess
def test_older_scores_have_no_health_record(data, tmp_path):
    out = tmp_path / "old"
    assert main(["eval", "--backend", "fake", "--model", CONFIG, "--data", str(data),
                 "--out", str(out), "--no-progress", "--no-report", "--tasks", "vt"]) == 0
    scores = json.loads((out / "scores.json").read_text())
    del scores["health"]
    (out / "scores.json").write_text(json.dumps(scores))
    assert "Not recorded: these scores were written by an older `ruler score`" in \
        to_markdown(write_report(out, plots=False))


def test_budget_words_do_not_depend_on_what_this_process_declared():
    """Older scores (no row budgets): the caps are said per family where the catalog's own
    family has several tasks (niah) and per task otherwise (vt). A suite declared earlier in
    the same process (vt_c2_h2, another variable-tracking task) once turned "vt" into
    "variable_tracking" (seen in CI, where another test module ran first)."""
    records = [{"tokenizer": "c", "task": t, "max_seq_length": 1024, "index": 0,
                "prediction": "x", "finish_reason": "length"} for t in ("niah_single_1", "vt")]
    before = flags(health_facts(records, {"framework": "ruler", "max_tokens": 8}))
    declare("vt_c2_h2", "variable_tracking",
            {"type_haystack": "noise", "num_chains": 2, "num_hops": 2})
    after = flags(health_facts(records, {"framework": "ruler", "max_tokens": 8}))
    assert after == before
    found = {f.check: f for f in after}
    assert found["Generation settings"].finding == (
        "output capped below RULER's budget at 8 token(s) for niah, vt (RULER: niah 128, "
        "vt 30).")
