"""A folder's configs of one tokenizer config share its base seed (`ruler.builder.seed_series`):
a replicate or variant of another seed is refused by `ruler build` into the folder and by
`ruler merge`, in one line naming both seeds, nothing written (issue 30.10)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.builder.manifest import BuildEntry
from ruler.builder.seed_series import seed_clash
from ruler.catalog.manifest_records import TokenizerRecord
from ruler.catalog.variants import Replicate
from ruler.commands.main import main

TOK, TASK, L, SAMPLES = "gpt-4", "niah_single_1", 1024, 2


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".manifest.lock"}


@pytest.fixture(scope="module")
def rep_seed_7(tmp_path_factory) -> Path:
    """Replicate 1 of gpt-4, built with seed 7."""
    out = tmp_path_factory.mktemp("seed7") / "ruler"
    build(out, TOK, (TASK,), (L,), SAMPLES, workers=1, seed=7, variant=Replicate(1))
    return out


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("ruler: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.build
def test_merge_refuses_a_replicate_of_another_seed(built_gpt4_niah_single, rep_seed_7,
                                                   tmp_path, capsys):
    out = Path(shutil.copytree(built_gpt4_niah_single, tmp_path / "out"))
    before = _files(out)
    assert main(["merge", str(rep_seed_7), "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert "'gpt-4--rep1' has seed 7" in err and "'gpt-4' with seed 42" in err, err
    assert _files(out) == before


@pytest.mark.build
def test_merge_refuses_inputs_of_two_seeds(built_gpt4_niah_single, rep_seed_7, tmp_path,
                                           capsys):
    out = tmp_path / "fresh"
    assert main(["merge", str(built_gpt4_niah_single), str(rep_seed_7), "--out",
                 str(out)]) == 2
    err = _one_line(capsys)
    assert "seed 7" in err and "seed 42" in err and str(built_gpt4_niah_single) in err, err
    assert not out.exists()


@pytest.mark.build
def test_build_into_a_folder_of_another_seed_refuses(built_gpt4_niah_single, tmp_path, capsys):
    out = Path(shutil.copytree(built_gpt4_niah_single, tmp_path / "out"))
    before = _files(out)
    argv = ["build", "--tokenizer", TOK, "--tasks", TASK, "--lengths", str(L), "--samples",
            str(SAMPLES), "--out", str(out), "--no-progress", "--workers", "1"]
    assert main([*argv, "--seed", "7", "--replicate", "1"]) == 2
    err = _one_line(capsys)
    assert "seed 7" in err and "seed 42" in err and "--seed 42" in err, err
    assert _files(out) == before
    assert main([*argv, "--seed", "7", "--depths", "2"]) == 2  # a variant is in the series too
    _one_line(capsys)
    assert _files(out) == before
    assert main([*argv, "--replicate", "1"]) == 0  # the folder's seed: joins the series


def _entry(seed: int | None, variant: dict | None = None) -> BuildEntry:
    return BuildEntry(tokenizer=TokenizerRecord(name="t", kind="hf"), seed=seed, variant=variant)


def test_the_series_is_the_tokenizer_config():
    builds = {"t": _entry(42), "t--rep2": _entry(42, {"replicate": 2}),
              "u": _entry(7), "old": _entry(None)}
    assert seed_clash(builds, "t--rep1", {"replicate": 1}, 42) is None
    clash = seed_clash(builds, "t--rep1", {"replicate": 1}, 7)
    assert (clash.other, clash.other_seed, clash.series) == ("t", 42, "t")
    assert seed_clash(builds, "t--depth4", {"depth_bins": 4}, 7).other == "t"
    assert seed_clash(builds, "t--base", {"base_model": True}, 7).other == "t"
    assert seed_clash(builds, "u--rep1", {"replicate": 1}, 7) is None  # u's own seed
    assert seed_clash(builds, "old--nocontext", {"no_context": True}, 3) is None  # none recorded
    assert seed_clash({"t--rep2": _entry(42, {"replicate": 2})}, "t", None, 7).other == "t--rep2"
