"""The set-up health section compares against what the rows carry, and says "ok" only about what
it compared: answers that copy their prompt (a server echoing its input) and answers far past
the row's own budget are flagged though upstream scores them, and an output cap is compared
with the row's own budget (a build with --output-budget reserves more than RULER's)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.builds import build, rows
from helpers.reasoning import thinking_tokenizer
from ruler.catalog.variants import OutputBudget
from ruler.eval.metrics.answer_checks import copies_prompt, past_budget
from ruler.eval.metrics.health import flags
from ruler.eval.records.dataset import open_dataset
from ruler.eval.report.run import build_report, to_markdown
from ruler.eval.runner import EvalConfig, run_eval
from ruler.eval.scoring.score import score_file

pytestmark = [pytest.mark.build]

QWEN, TASKS, L = "qwen2.5", ("niah_single_1", "vt"), 1024


def test_a_copy_of_the_prompt_and_a_long_answer_are_told_from_right_answers():
    prompt = "Some text. " * 200 + "One of the special magic numbers for x is: 1234567. " \
        + "More text. " * 200 + "What is the special magic number for x?"
    assert copies_prompt(prompt, prompt) and copies_prompt(prompt[2000:4000], prompt)
    assert not copies_prompt("The special magic number for x is 1234567.", prompt)
    # a long answer of its own, quoting a needle, is no copy
    assert not copies_prompt("I read it all. " * 20 + "1234567", prompt)
    assert past_budget({}, "x" * 5000, 128) and not past_budget({}, "x" * 500, 128)
    # counted tokens decide where the predictions have them
    assert past_budget({"output_tokens": 300}, "short", 128)
    assert not past_budget({"output_tokens": 200}, "x" * 5000, 128)


def _foreign(data: Path, tmp_path: Path, config: str, tasks, length: int, answer) -> Path:
    lines = [json.dumps({**{k: r[k] for k in ("tokenizer", "task", "max_seq_length", "index")},
                         "prediction": answer(r)})
             for t in tasks for r in rows(data, config, t, length)]
    path = tmp_path / "foreign.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_echoing_server_scores_as_upstream_and_is_flagged(built_qwen_niah_vt, tmp_path):
    data = built_qwen_niah_vt
    path = _foreign(data, tmp_path, QWEN, TASKS, L, lambda r: r["input"])
    scores = score_file(path, open_dataset(str(data)))
    # upstream's score, as upstream gives it: the echo holds the needle
    assert {c.task: c.score for c in scores.cells}["niah_single_1"] == 100.0
    found = {f.check: f for f in flags(scores.health)}
    copy = found["Answers copying the prompt"]
    assert copy.status == "problem" and copy.finding.startswith("8 of 8 answered row(s) repeat")
    past = found["Answers past their budget"]
    assert past.status == "problem" and "8 of 8 answered row(s) are more than 2x" in \
        past.finding
    md = to_markdown(build_report(scores))
    assert "| Answers copying the prompt | **problem** |" in md


def test_an_echo_of_rulerv2_prompts_is_flagged_too(built_llama_v2, tmp_path):
    path = _foreign(built_llama_v2, tmp_path, "llama-3.1--v2", ("mk_niah_basic",), 4096,
                    lambda r: r["input"])
    scores = score_file(path, open_dataset(str(built_llama_v2)), tasks=["mk_niah_basic"])
    found = {f.check: f for f in flags(scores.health)}
    assert found["Answers copying the prompt"].status == "problem"
    # 16,384 tokens to generate: a 4K echo is within it
    assert found["Answers past their budget"].status == "ok"


def test_right_answers_are_ok_and_say_what_was_compared(built_qwen_niah_vt, tmp_path):
    path = _foreign(built_qwen_niah_vt, tmp_path, QWEN, TASKS, L,
                    lambda r: " ".join(r["outputs"]))
    found = {f.check: f for f in flags(score_file(path, open_dataset(
        str(built_qwen_niah_vt))).health)}
    assert found["Answers copying the prompt"].finding.startswith("none of 8 answered row(s)")
    assert found["Answers past their budget"].finding == (
        "none of 8 answered row(s), each compared with its own row's budget.")


def test_a_cap_is_compared_with_the_rows_own_budget(tmp_path):
    """Rows built with --output-budget 200, run with --max-tokens 150: above RULER's 128 for
    niah, below the rows' own 200: a problem, not "ok ... each row's own output budget"."""
    think = thinking_tokenizer(Path(os.environ["RULER_TOKENIZERS"]) / QWEN, tmp_path / "think")
    data = tmp_path / "data"
    build(data, str(think), ("niah_single_1",), (L,), samples=2, workers=1,
          variant=OutputBudget(200))
    out = tmp_path / "run"
    run_eval(EvalConfig(model=str(think), data=str(data), tokenizer_config="think--out200",
                        out=out, progress=False, render_workers=0, backend="fake",
                        model_tokenizer=str(think),
                        max_tokens=150))
    scores = json.loads((out / "scores.json").read_text())
    assert scores["health"]["row_budget"] == {"niah_single_1": 200}
    assert scores["health"]["capped"] == {"niah_single_1": 2}
    from ruler.eval.report.run import load_scores

    found = {f.check: f for f in flags(load_scores(out).health)}
    settings = found["Generation settings"]
    assert settings.status == "problem"
    assert "output capped below the rows' own budget at 150 token(s) for niah (the rows': " \
           "niah 200)" in settings.finding
    # without the cap: ok, and says what it rests on
    out2 = tmp_path / "run2"
    run_eval(EvalConfig(model=str(think), data=str(data), tokenizer_config="think--out200",
                        out=out2, progress=False, render_workers=0, backend="fake",
                        model_tokenizer=str(think)))
    found = {f.check: f for f in flags(load_scores(out2).health)}
    assert found["Generation settings"].finding == "greedy, each row's own output budget."
