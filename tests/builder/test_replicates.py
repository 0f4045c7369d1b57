"""Replicate configs (`ruler build --replicate I`, builder.variants.Replicate): the default
config's tasks, lengths and sample count redrawn from other per-sample seeds; they build,
verify (rows regenerated from the manifest's recipe), load with `datasets.load_dataset`, and
are named and explained in the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.builder.variants import Replicate, variant_from_record
from ruler.builder.verify.run import verify
from ruler.cli import main

TOK, L, SAMPLES = "gpt-4", 1024, 3
TASKS = ("niah_single_1", "niah_multikey_1")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replicates")
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1)
    for i in (1, 2):
        build(out, TOK, TASKS, (L,), SAMPLES, workers=1, variant=Replicate(i))
    return out


def test_replicates_redraw_every_sample_and_keep_the_rest(out):
    for task in TASKS:
        default = rows(out, TOK, task, L)
        reps = [rows(out, f"{TOK}--rep{i}", task, L) for i in (1, 2)]
        for rep in reps:
            assert len(rep) == SAMPLES and [r["index"] for r in rep] == list(range(SAMPLES))
            for r, d in zip(rep, default):
                assert r["outputs"] != d["outputs"]  # another draw
                assert (r["task"], r["max_seq_length"], r["metric"],
                        r["tokens_to_generate"]) == (d["task"], d["max_seq_length"],
                                                     d["metric"], d["tokens_to_generate"])
                assert r["length"] <= L
        assert [r["outputs"] for r in reps[0]] != [r["outputs"] for r in reps[1]]


def test_replicates_are_recorded_and_explained_in_the_card(out):
    manifest = json.loads((out / "manifest.json").read_text())
    for i in (1, 2):
        assert manifest["builds"][f"{TOK}--rep{i}"]["variant"] == {"replicate": i}
    assert variant_from_record({"replicate": 2}) == Replicate(2)
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {TOK, f"{TOK}--rep1", f"{TOK}--rep2"} <= configs
    assert f"### {Replicate.title}" in card and "seed-to-seed variance" in card


def test_replicates_verify_and_load(out, tmp_path):
    from datasets import load_dataset

    report = verify(out, regenerate=SAMPLES, workers=1, load=False)
    assert report.ok, [str(p) for p in report.all_problems()]
    regenerated = {f.path: f.regenerated for f in report.files}
    assert all(regenerated[f"data/{TOK}--rep{i}/{t}/{L}.parquet"] == SAMPLES
               for i in (1, 2) for t in TASKS)
    ds = load_dataset(str(out), f"{TOK}--rep2", split=str(L), cache_dir=str(tmp_path))
    assert ds.num_rows == len(TASKS) * SAMPLES and set(ds["tokenizer"]) == {f"{TOK}--rep2"}


def test_the_build_flag(out, capsys):
    argv = ["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
            "--samples", str(SAMPLES), "--out", str(out), "--no-progress"]
    assert main([*argv, "--replicate", "1"]) == 0
    assert f"{TOK}--rep1: 0 file(s) built, {len(TASKS)} up to date" in capsys.readouterr().out
    assert main([*argv, "--replicate", "0"]) == 2
    assert "--replicate must be a positive integer" in capsys.readouterr().err
