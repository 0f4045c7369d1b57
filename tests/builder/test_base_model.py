"""Base-model configs (`ruler build --base`, catalog.variants.BaseModel): rows counted as a
base model gets them (special tokens + input + answer prefix, no chat template), as upstream's
`--model_template_type base`; the default config's samples otherwise. They build, verify (rows
regenerated from the manifest), load with `datasets.load_dataset`, are explained in the card,
and `ruler eval` runs them in base mode by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog.variants import BaseModel, variant_from_record
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

TOK, L, SAMPLES = "gemma-3", 4096, 3
TASKS = ("niah_single_1", "vt", "qa_1")
BASE = f"{TOK}--base"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("base")
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1)
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1, variant=BaseModel())
    return out


def test_rows_count_the_base_prompt_and_keep_the_default_samples(out):
    tok = load_tokenizer(TOK)
    for task in TASKS:
        default, base = rows(out, TOK, task, L), rows(out, BASE, task, L)
        assert [r["index"] for r in base] == list(range(SAMPLES))
        for b, d in zip(base, default):
            assert b["length"] == tok.prompt_length(b["input"], b["answer_prefix"], mode="base") \
                + b["tokens_to_generate"] <= L
            # a chat template costs tokens: the base prompt of the default row is shorter than
            # its own count, so the base row may hold at least as much haystack
            assert tok.prompt_length(d["input"], d["answer_prefix"], mode="base") \
                < tok.prompt_length(d["input"], d["answer_prefix"], mode="chat")
            assert b["haystack_size"] >= d["haystack_size"]
            if task != "qa_1":  # same seed: same needles and answers (qa: same question)
                assert b["outputs"] == d["outputs"]
            assert b["question"] == d["question"] or task == "vt"


def test_the_config_is_recorded_and_explained(out):
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["builds"][BASE]["variant"] == {"base_model": True}
    assert manifest["builds"][BASE]["prompt_mode"] == "base"
    assert manifest["builds"][TOK]["prompt_mode"] == "chat"
    assert variant_from_record({"base_model": True}) == BaseModel()
    with pytest.raises(Exception, match="unknown or malformed variant"):
        variant_from_record({"base_model": 1})
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {TOK, BASE} <= configs
    assert f"### {BaseModel.title}" in card and "--model_template_type base" in card


def test_base_configs_verify_and_load(out, tmp_path):
    from datasets import load_dataset

    report = verify(out, regenerate=SAMPLES, workers=1, load=False)
    assert report.ok, [str(p) for p in report.all_problems()]
    regenerated = {f.path: f.regenerated for f in report.files}
    assert all(regenerated[f"data/{BASE}/{t}/{L}.parquet"] == SAMPLES for t in TASKS)
    ds = load_dataset(str(out), BASE, split=str(L), cache_dir=str(tmp_path))
    assert ds.num_rows == len(TASKS) * SAMPLES and set(ds["tokenizer"]) == {BASE}


@pytest.mark.subprocess
def test_eval_runs_a_base_config_in_base_mode(out, tmp_path):
    res = tmp_path / "res"
    assert main(["eval", "--backend", "fake", "--model", "fake", "--model-tokenizer", TOK,
                 "--data", str(out), "--tokenizer-config", BASE, "--no-progress",
                 "--out", str(res), "--no-plots"]) == 0
    assert json.loads((res / "run.json").read_text())["mode"] == "base"
    scores = json.loads((res / "scores.json").read_text())
    assert scores["config"] == BASE and all(c["score"] == 100.0 for c in scores["cells"])


def test_the_build_flag(out, capsys):
    argv = ["build", "--tasks", ",".join(TASKS), "--lengths", str(L), "--samples", str(SAMPLES),
            "--out", str(out), "--no-progress"]
    assert main([*argv, "--tokenizer", TOK, "--base"]) == 0
    assert f"{BASE}: 0 file(s) built, {len(TASKS)} up to date" in capsys.readouterr().out
    assert main([*argv, "--tokenizer", "gpt-4", "--base"]) == 2
    assert "has no chat template" in capsys.readouterr().err
    assert main([*argv, "--tokenizer", TOK, "--base", "--replicate", "1"]) == 2
    assert "one variant per build" in capsys.readouterr().err
