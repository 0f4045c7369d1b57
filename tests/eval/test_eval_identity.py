"""A results folder is one run: resuming `ruler eval` with anything that shapes a prompt or its
scoring changed is refused, naming it, before any row is sent; and the folder keeps what it
recorded. The run's identity, field by field (`RunRecord.SETTINGS`, the rendering tokenizer
and chat template, how the prompt reaches the model; the model, the config and the rows'
content hashes besides):

| field                  | changed by                                  |
|------------------------|---------------------------------------------|
| model                  | --model                                     |
| tokenizer config       | --tokenizer-config                          |
| mode                   | --mode                                      |
| limit (smaller)        | --limit                                     |
| chat_template_kwargs   | --chat-template-kwargs                      |
| reasoning              | --reasoning-end-marker / --reasoning-parser |
| max_tokens             | --max-tokens                                |
| rendering tokenizer    | --model-tokenizer (files, chat template)    |
| prompt delivery        | --backend / --api / --answer-prefix-turn    |

No flag sets a system prompt, stop strings or sampling (decoding is greedy), and `ruler eval`
scores with the rows' own metric (`ruler score --metric` records its choice in scores.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.fake_openai import MODEL, FakeServer
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

QWEN, TASK = "qwen2.5", "niah_single_1"


def _fake(data: Path, out: Path, *extra: str, config: str = QWEN,
          task: str = TASK) -> list[str]:
    return ["eval", "--backend", "fake", "--model", "m", "--data", str(data),
            "--tokenizer-config", config, "--tasks", task, "--out", str(out), "--no-progress",
            "--no-report", "--render-workers", "0", "--limit", "2", *extra]


CHANGES = {
    "model": ((), ("--model", "other"), "holds a run with model 'm', not 'other'"),
    "mode": ((), ("--mode", "base"), "holds a run with mode 'chat', not 'base'"),
    "limit": ((), ("--limit", "1"), "holds a run with limit 2, not 1"),
    "chat_template_kwargs": ((), ("--chat-template-kwargs", '{"x": 1}',
                                  "--allow-length-mismatch"),
                             "holds a run with chat_template_kwargs None, not {'x': 1}"),
    "max_tokens": (("--max-tokens", "20"), ("--max-tokens", "10"),
                   "holds a run with max_tokens 20, not 10"),
    "model tokenizer": ((), ("--model-tokenizer", "llama-3.1", "--allow-length-mismatch"),
                        "whose prompts were rendered by 'qwen2.5', not 'llama-3.1': the "
                        "tokenizer (files and chat template) differs"),
}


@pytest.mark.parametrize("field", list(CHANGES))
def test_a_resume_that_changes_the_run_is_refused_naming_it(built_qwen_niah_vt, tmp_path,
                                                            capsys, field):
    first, then, said = CHANGES[field]
    out = tmp_path / "run"
    args = _fake(built_qwen_niah_vt, out, *first)
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    changed = [a for a in args if a not in first]
    assert main(changed[:1] + changed[1:] + list(then)) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    # nothing of the refused run is written: run.json keeps the template it recorded
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_the_same_run_again_is_accepted_and_records_what_rendered_it(built_qwen_niah_vt,
                                                                     tmp_path):
    out = tmp_path / "run"
    assert main(_fake(built_qwen_niah_vt, out)) == 0
    assert main(_fake(built_qwen_niah_vt, out, "--limit", "3")) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["prompt_template"]["tokenizer_name"] == QWEN
    assert len(run["prompt_template"]["tokenizer"]) == 16
    assert run["prompt_delivery"] == "token ids"


def test_another_config_is_refused(built_llama_oneruler, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_fake(built_llama_oneruler, out, config="llama-3.1--oneruler-en",
                      task="or_cwe")) == 0
    assert main(_fake(built_llama_oneruler, out, config="llama-3.1--oneruler-ko",
                      task="or_cwe")) == 2
    assert "holds tokenizer config 'llama-3.1--oneruler-en', not 'llama-3.1--oneruler-ko'" \
        in capsys.readouterr().err


def test_another_reasoning_marker_is_refused(built_llama_v2, tmp_path, capsys):
    out = tmp_path / "run"
    args = _fake(built_llama_v2, out, "--mode", "reasoning", config="llama-3.1--v2",
                 task="mk_niah_basic")
    assert main(args) == 0
    assert main(args + ["--reasoning-end-marker", "</answer>"]) == 2
    assert "holds a run with reasoning {'end_marker': '</think>'}, not {'end_marker': " \
           "'</answer>'}" in capsys.readouterr().err


@pytest.mark.network
def test_another_prompt_delivery_is_refused(built_qwen_niah_vt, tmp_path, capsys):
    out = tmp_path / "run"

    def args(*extra: str) -> list[str]:
        return ["eval", "--model", MODEL, "--model-tokenizer", QWEN, "--data",
                str(built_qwen_niah_vt), "--tokenizer-config", QWEN, "--tasks", TASK,
                "--backend", "openai", "--base-url", server.url, "--out", str(out),
                "--no-progress", "--no-report", "--render-workers", "0", *extra]

    with FakeServer() as server:
        assert main(args("--limit", "2")) == 0
        run = json.loads((out / "run.json").read_text())
        assert run["prompt_delivery"] == "token ids"
        before = (out / "predictions.jsonl").read_bytes()
        capsys.readouterr()
        assert main(args("--api", "completions-text")) == 2
        err = capsys.readouterr().err
        assert "holds rows whose prompts reached the model as token ids, not text " \
               "(completions-text)" in err
        assert (out / "predictions.jsonl").read_bytes() == before
        # the same token ids from another engine may take its turn
        assert main(_fake(built_qwen_niah_vt, out, "--model", MODEL, "--limit", "3")) == 0
