"""Replicate configs (`ruler build --replicate I`, catalog.variants.Replicate): the default
config's tasks, lengths and sample count redrawn from other per-sample seeds; they build,
verify (rows regenerated from the manifest's recipe), load with `datasets.load_dataset`, and
are named and explained in the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.builds import build, rows
from ruler.builder.verify.run import verify
from ruler.catalog.variants import MAX_REPLICATES, Replicate, variant_from_record
from ruler.commands.main import main

TOK, L, SAMPLES = "gpt-4", 1024, 3
TASKS = ("niah_single_1", "niah_multikey_1")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replicates")
    build(out, TOK, TASKS, (L,), SAMPLES, workers=1)
    for i in (1, 2):
        build(out, TOK, TASKS, (L,), SAMPLES, workers=1, variant=Replicate(i))
    return out


@pytest.mark.build
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


@pytest.mark.build
def test_replicates_are_recorded_and_explained_in_the_card(out):
    manifest = json.loads((out / "manifest.json").read_text())
    for i in (1, 2):
        assert manifest["builds"][f"{TOK}--rep{i}"]["variant"] == {"replicate": i}
    assert variant_from_record({"replicate": 2}) == Replicate(2)
    card = (out / "README.md").read_text()
    configs = {c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]}
    assert {TOK, f"{TOK}--rep1", f"{TOK}--rep2"} <= configs
    assert f"### {Replicate.title}" in card and "seed-to-seed variance" in card


@pytest.mark.build
def test_replicates_verify_and_load(out, tmp_path):
    from datasets import load_dataset

    report = verify(out, regenerate=SAMPLES, workers=1, load=False)
    assert report.ok, [str(p) for p in report.all_problems()]
    regenerated = {f.path: f.regenerated for f in report.files}
    assert all(regenerated[f"data/{TOK}--rep{i}/{t}/{L}.parquet"] == SAMPLES
               for i in (1, 2) for t in TASKS)
    ds = load_dataset(str(out), f"{TOK}--rep2", split=str(L), cache_dir=str(tmp_path))
    assert ds.num_rows == len(TASKS) * SAMPLES and set(ds["tokenizer"]) == {f"{TOK}--rep2"}


@pytest.mark.build
def test_the_build_flag(out, capsys):
    argv = ["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
            "--samples", str(SAMPLES), "--out", str(out), "--no-progress"]
    assert main([*argv, "--replicate", "1"]) == 0
    assert f"{TOK}--rep1: 0 file(s) built, {len(TASKS)} up to date" in capsys.readouterr().out
    assert main([*argv, "--replicate", "0"]) == 2
    assert "--replicate must be a positive integer" in capsys.readouterr().err


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file of a build folder, by relative path (the lock file aside)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


@pytest.mark.build
def test_replicates_k_builds_k_configs_as_k_single_builds_would(tmp_path, capsys):
    """`--replicates 2` = `--replicate 1` then `--replicate 2`: the same configs, manifest
    entries, card and file bytes."""
    argv = ["build", "--tokenizer", TOK, "--tasks", ",".join(TASKS), "--lengths", str(L),
            "--samples", str(SAMPLES), "--no-progress", "--workers", "1"]
    assert main([*argv, "--out", str(tmp_path / "k"), "--replicates", "2"]) == 0
    printed = capsys.readouterr().out
    assert f"{TOK}--rep1: {len(TASKS)} file(s) built" in printed
    assert f"{TOK}--rep2: {len(TASKS)} file(s) built" in printed
    for i in (1, 2):
        assert main([*argv, "--out", str(tmp_path / "one"), "--replicate", str(i)]) == 0
    one, k = _tree(tmp_path / "one"), _tree(tmp_path / "k")
    assert sorted(k) == sorted(one)
    assert {p for p in k if p.endswith(".parquet")} == {
        f"data/{TOK}--rep{i}/{t}/{L}.parquet" for i in (1, 2) for t in TASKS}
    assert all(k[p] == one[p] for p in k), [p for p in k if k[p] != one[p]]
    builds = json.loads(k["manifest.json"])["builds"]
    assert sorted(builds) == [f"{TOK}--rep1", f"{TOK}--rep2"]
    assert [builds[f"{TOK}--rep{i}"]["variant"] for i in (1, 2)] == [{"replicate": 1},
                                                                     {"replicate": 2}]


@pytest.mark.parametrize("extra, says", [
    (["--replicates", "0"], "--replicates must be a positive integer"),
    (["--replicates", "-2"], "--replicates must be a positive integer"),
    # impossible sizes, refused before anything is made (10**8 filled 13.7 GB in ten minutes)
    (["--replicates", "100000000"], "--replicates: at most 100 replicate configs"),
    (["--replicates", str(MAX_REPLICATES + 1)], f"at most {MAX_REPLICATES} replicate configs"),
    (["--replicates", "3", "--replicate", "1"], "give only one of them"),
    (["--replicates", "3", "--depths", "4"], "does not combine with another variant"),
    (["--replicates", "3", "--base"], "does not combine with another variant"),
])
def test_replicates_refuses_bad_k_in_one_line(tmp_path, capsys, extra, says):
    out = tmp_path / "never"
    assert main(["build", "--tokenizer", TOK, "--tasks", TASKS[0], "--lengths", str(L),
                 "--samples", str(SAMPLES), "--out", str(out), "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("ruler: error: ") and err.count("\n") == 1, err
    assert not out.exists()


def test_replicates_flag_is_explained_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--replicates K" in text and "build replicates 1..K of the default config" in text
