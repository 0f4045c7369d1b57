"""No-context configs (`ruler build --no-context`, catalog.variants.NoContext): each row of the
default config with its haystack cut out — instruction, question and answer prefix kept — so a
model's score without the context can be measured. They build, verify (rows regenerated from
the manifest), load with `datasets.load_dataset`, and are explained in the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.builder.verify.run import verify
from ruler.catalog.checks import check_row
from ruler.catalog.variants import NoContext, variant_from_record
from ruler.commands.main import main

pytestmark = [pytest.mark.build]

TOK, L, SAMPLES = "gemma-3", 4096, 3
TASKS = ("niah_single_1", "niah_multivalue", "vt", "cwe", "fwe", "qa_1")
NC = f"{TOK}--nocontext"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nocontext")
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1)
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1, variant=NoContext())
    return out


def test_each_row_is_the_default_row_without_its_haystack(out):
    tok = load_tokenizer(TOK)
    for task in TASKS:
        for d, n in zip(rows(out, TOK, task, L), rows(out, NC, task, L), strict=True):
            # the same sample: question, references and prefix
            assert (n["index"], n["question"], n["answer_prefix"], n["outputs"]) == \
                (d["index"], d["question"], d["answer_prefix"], d["outputs"])
            assert n["context"] + n["question"] == n["input"]
            # what is left of the context is its instruction: a prefix and a suffix of it,
            # with everything between (the haystack) gone
            cut = next(i for i in range(len(n["context"]) + 1)
                       if not d["context"].startswith(n["context"][:i + 1]))
            assert d["context"].endswith(n["context"][cut:])
            assert len(d["context"]) - len(n["context"]) > 5 * len(n["context"]) or task in (
                "vt", "cwe")  # vt and cwe keep their one-shot example
            assert n["length"] == tok.prompt_length(n["input"], n["answer_prefix"], mode="chat") \
                + n["tokens_to_generate"] < d["length"] / 2
            assert (n["gold_token_positions"], n["gold_depths"], n["haystack_size"]) == \
                ([], [], 0)
            assert n["tokens_to_generate"] == d["tokens_to_generate"]
            if task != "qa_1":  # the answer is no longer in the prompt
                assert check_row(n) is not None and check_row(d) is None


def test_the_config_is_recorded_and_explained(out):
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["builds"][NC]["variant"] == {"no_context": True}
    assert variant_from_record({"no_context": True}) == NoContext()
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {TOK, NC} <= configs
    assert f"### {NoContext.title}" in card and "closed-book" in card


def test_no_context_configs_verify_and_load(out, tmp_path):
    from datasets import load_dataset

    report = verify(out, regenerate=SAMPLES, workers=1, load=False)
    assert report.ok, [str(p) for p in report.all_problems()]
    regenerated = {f.path: f.regenerated for f in report.files}
    assert all(regenerated[f"data/{NC}/{t}/{L}.parquet"] == SAMPLES for t in TASKS)
    ds = load_dataset(str(out), NC, split=str(L), cache_dir=str(tmp_path))
    assert ds.num_rows == len(TASKS) * SAMPLES and set(ds["haystack_size"]) == {0}


@pytest.mark.subprocess
def test_eval_scores_it_like_any_config(out, tmp_path):
    res = tmp_path / "res"
    assert main(["eval", "--backend", "fake", "--fake-answers", "empty", "--model", "fake",
                 "--model-tokenizer", TOK, "--data", str(out), "--tokenizer-config", NC,
                 "--no-progress", "--out", str(res)]) == 0
    scores = json.loads((res / "scores.json").read_text())
    assert scores["config"] == NC and [c["score"] for c in scores["cells"]] == [0.0] * len(TASKS)


def test_the_build_flag(out, capsys):
    argv = ["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
            "--samples", str(SAMPLES), "--out", str(out), "--no-progress"]
    assert main([*argv, "--no-context"]) == 0
    assert f"{NC}: 0 file(s) built, {len(TASKS)} up to date" in capsys.readouterr().out
    assert main([*argv, "--no-context", "--base"]) == 2
    assert "one variant per build" in capsys.readouterr().err
