"""Reasoning mode: answer extraction on hand-made outputs, and the whole `ruler eval` path with
a scripted engine on a build with a reserved output budget (the real-engine version of the
latter is in test_eval_vllm.py)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.reasoning import expected_prompt, thinking_tokenizer
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.catalog.variants import OutputBudget
from ruler.eval.backends import GenResult
from ruler.eval.backends.fake import FakeBackend, FakeOptions
from ruler.eval.reasoning import extract_answer, opens_reasoning, start_marker_for
from ruler.eval.report.run import to_markdown, write_report
from ruler.eval.runner import EvalConfig, run_eval
from ruler.kernel.errors import RulerError

TASKS = ("niah_single_1", "niah_multikey_2")
BUDGET = 64


# --- extraction on hand-made outputs ----------------------------------------------------------

def test_the_answer_is_the_text_after_the_first_end_marker():
    got = extract_answer("Let me look.\nThe key is 7.</think>\n\nThe number is 4512. </think>",
                         "stop")
    assert got.state == "ended" and got.answer == "\n\nThe number is 4512. </think>"
    assert extract_answer("<think>hm</think>", "stop").answer == ""
    assert extract_answer("<think>hm</think>", "stop").state == "ended"


def test_an_output_that_hit_the_budget_while_thinking_is_budget_exhausted():
    got = extract_answer("<think>still counting the words, 4512 maybe", "length")
    assert (got.answer, got.state) == ("", "budget_exhausted")
    # the template opened the thinking: the output itself has no start marker
    got = extract_answer("still counting, 4512 maybe", "length", prompt_opens_reasoning=True)
    assert (got.answer, got.state) == ("", "budget_exhausted")


def test_an_output_that_stopped_inside_its_thinking_is_unterminated():
    got = extract_answer("4512 is it, I think", "stop", prompt_opens_reasoning=True)
    assert (got.answer, got.state) == ("", "unterminated")


def test_an_output_without_thinking_is_the_answer():
    got = extract_answer("The special magic number is 4512.", "stop")
    assert (got.answer, got.state) == ("The special magic number is 4512.", "no_reasoning")
    # a long plain answer that ran out of budget is still an answer, not unfinished thinking
    got = extract_answer("4512 4512 4512", "length")
    assert (got.answer, got.state) == ("4512 4512 4512", "no_reasoning")


def test_an_empty_output():
    assert extract_answer("", "stop") == extract_answer("", "stop")
    assert (extract_answer("", "stop").answer, extract_answer("", "stop").state) == \
        ("", "no_reasoning")
    got = extract_answer("", "length", prompt_opens_reasoning=True)
    assert (got.answer, got.state) == ("", "budget_exhausted")


def test_a_configurable_end_marker():
    got = extract_answer("[THINK]count[/THINK]4512", "stop", end_marker="[/THINK]")
    assert (got.answer, got.state) == ("4512", "ended")
    assert start_marker_for("[/THINK]") is None and start_marker_for("</reason>") == "<reason>"
    # no start marker known: without the end marker, only a budget hit counts as thinking
    assert extract_answer("count on", "length", end_marker="[/THINK]").state == \
        "budget_exhausted"
    assert extract_answer("4512", "stop", end_marker="[/THINK]").answer == "4512"


def test_whether_a_prompt_leaves_thinking_open():
    assert opens_reasoning(expected_prompt("q"))
    assert not opens_reasoning(expected_prompt("q", enable_thinking=False))
    assert not opens_reasoning("<|im_start|>assistant\n")


# --- `ruler eval` in reasoning mode with a scripted engine ------------------------------------

class ScriptedBackend(FakeBackend):
    """The fake engine answering each row with a scripted (text, finish_reason), recording
    the requests."""

    name = "scripted"

    def __init__(self, script: dict):
        super().__init__(FakeOptions("scripted", answers="empty"))
        self.script, self.requests = script, []

    def answer(self, request):
        self.requests.append(request)
        text, finish = self.script[request.key]
        return GenResult(request.key, text, output_tokens=BUDGET if finish == "length" else 9,
                         finish_reason=finish)


@pytest.fixture(scope="module")
def think(tmp_path_factory) -> Path:
    shared = Path(os.environ["RULER_TOKENIZERS"]) / "qwen2.5"
    return thinking_tokenizer(shared, tmp_path_factory.mktemp("tok") / "qwen-think")


@pytest.fixture(scope="module")
def data(tmp_path_factory, think) -> Path:
    out = tmp_path_factory.mktemp("data")
    build(out, str(think), TASKS, (1024,), samples=3, workers=1,
          variant=OutputBudget(BUDGET))
    return out


CONFIG = f"qwen-think--out{BUDGET}"


def _script(data: Path) -> dict:
    """Row 0 thinks and answers right, row 1 runs out of budget while thinking, row 2 stops
    (end of sequence) inside its thinking."""
    script = {}
    for t in TASKS:
        for r in rows(data, CONFIG, t, 1024):
            gold = " ".join(r["outputs"])
            key = (CONFIG, t, 1024, r["index"])
            script[key] = [(f"Looking for it. Not {gold}?</think>\n\nIt is {gold}.", "stop"),
                           (f"Counting... {gold} is close", "length"),
                           ("No idea.", "stop")][r["index"]]
    return script


@pytest.mark.build
def test_reasoning_eval_renders_without_prefix_and_scores_the_answer(think, data, tmp_path):
    out = tmp_path / "res"
    backend = ScriptedBackend(_script(data))
    cfg = EvalConfig(model=str(think), data=str(data), tokenizer_config=CONFIG, out=out,
                     progress=False, render_workers=0)
    outcome = run_eval(cfg, backend=backend)
    assert (outcome.generated, outcome.budget_exhausted) == (6, 2)

    tok = load_tokenizer(str(think))
    by_key = {(CONFIG, t, 1024, r["index"]): r for t in TASKS for r in rows(data, CONFIG, t, 1024)}
    assert len(backend.requests) == 6
    for req in backend.requests:
        row = by_key[req.key]
        # The template's generation prompt, written out by hand, and no answer prefix.
        want = tok.hf.backend_tokenizer.encode(expected_prompt(row["input"]),
                                               add_special_tokens=False).ids
        assert list(req.prompt_ids) == want
        assert row["answer_prefix"].strip() not in tok.hf.decode(list(req.prompt_ids))
        assert req.max_tokens == row["tokens_to_generate"] == BUDGET
        assert len(req.prompt_ids) + BUDGET == row["length"] <= 1024
        assert req.skip_special_tokens  # `</think>` is plain text in this vocabulary

    preds = {(p["task"], p["index"]): p
             for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    for t in TASKS:
        gold = " ".join(by_key[(CONFIG, t, 1024, 0)]["outputs"])
        assert preds[(t, 0)]["reasoning"] == "ended"
        assert preds[(t, 0)]["prediction"] == f"\n\nIt is {gold}."
        assert preds[(t, 0)]["raw_prediction"].startswith("Looking for it.")
        assert (preds[(t, 1)]["reasoning"], preds[(t, 1)]["prediction"]) == \
            ("budget_exhausted", "")
        assert preds[(t, 1)]["raw_prediction"].startswith("Counting")
        assert preds[(t, 1)]["output_tokens"] == BUDGET
        assert (preds[(t, 2)]["reasoning"], preds[(t, 2)]["prediction"]) == \
            ("unterminated", "")

    run = json.loads((out / "run.json").read_text())
    assert run["mode"] == "reasoning" and run["reasoning"] == {"end_marker": "</think>"}
    scores = json.loads((out / "scores.json").read_text())
    assert scores["mode"] == "reasoning"
    for c in scores["cells"]:
        # row 0 right, rows 1 and 2 empty answers: RULER's metric unchanged, a third
        assert c["score"] == pytest.approx(100 / 3, abs=0.01) and c["scored"] == 3
        assert c["budget_exhausted"] == 1 and c["nulls"] == 2
    md = to_markdown(write_report(out, plots=False))
    assert "answered / nulls / skipped / failed / missing / budget exhausted" in md
    assert "| niah_single_1 | 3/2/0/0/0/1 |" in md
    rows_csv = list(csv.DictReader((out / "report.csv").open()))
    assert [r["budget_exhausted"] for r in rows_csv if r["task"] in TASKS] == ["1", "1"]


@pytest.mark.build
def test_a_resumed_reasoning_run_keeps_its_settings(think, data, tmp_path):
    out = tmp_path / "res"
    cfg = EvalConfig(model=str(think), data=str(data), tokenizer_config=CONFIG, out=out,
                     progress=False, render_workers=0, tasks=("niah_single_1",))
    run_eval(cfg, backend=ScriptedBackend(_script(data)))
    other = EvalConfig(**{**cfg.__dict__, "reasoning_end_marker": "</reason>"})
    with pytest.raises(RulerError, match="reasoning"):
        run_eval(other, backend=ScriptedBackend(_script(data)))


@pytest.mark.build
def test_reasoning_mode_needs_a_config_with_a_reserved_budget(think, tmp_path):
    data = tmp_path / "data"
    build(data, str(think), ("niah_single_1",), (1024,), samples=1, workers=1)
    cfg = EvalConfig(model=str(think), data=str(data), tokenizer_config="qwen-think",
                     out=tmp_path / "res", mode="reasoning", progress=False)
    with pytest.raises(RulerError, match="--output-budget"):
        run_eval(cfg, backend=ScriptedBackend({}))
    assert not (tmp_path / "res").exists()


@pytest.mark.build
def test_template_variables_reach_the_template_and_a_changed_count_is_refused(think, data,
                                                                              tmp_path):
    kwargs = {"enable_thinking": False}
    cfg = EvalConfig(model=str(think), data=str(data), tokenizer_config=CONFIG,
                     out=tmp_path / "res", progress=False, render_workers=0,
                     chat_template_kwargs=kwargs)
    with pytest.raises(RulerError, match="enable_thinking.*--allow-length-mismatch"):
        run_eval(cfg, backend=ScriptedBackend({}))
    # Allowed: the prompts carry the empty thinking section, and plain answers are answers.
    script = {k: ("It is 42.", "stop") for k in _script(data)}
    backend = ScriptedBackend(script)
    run_eval(EvalConfig(**{**cfg.__dict__, "allow_length_mismatch": True}), backend=backend)
    tok = load_tokenizer(str(think))
    row = rows(data, CONFIG, TASKS[0], 1024)[0]
    first = next(r for r in backend.requests if r.key == (CONFIG, TASKS[0], 1024, 0))
    assert list(first.prompt_ids) == tok.hf.backend_tokenizer.encode(
        expected_prompt(row["input"], enable_thinking=False), add_special_tokens=False).ids
    preds = [json.loads(x) for x in (tmp_path / "res" / "predictions.jsonl").read_text()
             .splitlines()]
    assert {(p["reasoning"], p["prediction"]) for p in preds} == {("no_reasoning", "It is 42.")}


@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
@pytest.mark.parametrize("parser", ["deepseek_r1", "qwen3"])
def test_vllms_reasoning_parsers_split_the_same_way(parser, tmp_path):
    """vLLM's parsers need the markers as tokens: a copy of the real tokenizer with the two
    added, as thinking models' tokenizers have them."""
    from transformers import PreTrainedTokenizerFast

    from ruler.eval.reasoning import vllm_parser_extractor

    tok = PreTrainedTokenizerFast.from_pretrained(Path(os.environ["RULER_TOKENIZERS"]) / "qwen2.5")
    tok.add_tokens(["<think>", "</think>"])
    extract = vllm_parser_extractor(parser, tok)
    assert extract("<think>a b</think>\n\nIt is 42.", "stop") == \
        extract_answer("<think>a b</think>\n\nIt is 42.", "stop")
    assert extract("a b</think>It is 42.", "stop").answer == "It is 42."
    assert extract("<think>still", "length").state == "budget_exhausted"
    assert extract("<think>x</think>", "stop").state == "ended"
    with pytest.raises(RulerError, match="not found"):
        vllm_parser_extractor("no_such_parser", tok)
    if parser == "deepseek_r1":  # this one refuses a vocabulary without its markers
        plain = PreTrainedTokenizerFast.from_pretrained(
            Path(os.environ["RULER_TOKENIZERS"]) / "qwen2.5")
        with pytest.raises(RulerError, match="does not fit this tokenizer"):
            vllm_parser_extractor(parser, plain)
