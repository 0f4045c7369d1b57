"""`ruler merge` (and every reader of a manifest) under attack and under concurrency: a shard
whose manifest names a path that leaves the folder, symbolic links inside a build folder, two
merges into one target at the same time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import build
from ruler.builder.manifest import read_manifest
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.build]

REL = "data/gpt-4/niah_single_1/1024.parquet"


@pytest.fixture(scope="module")
def shard(built_gpt4_niah_single) -> Path:
    """A small real build (gpt-4: quick to load; niah_single_1: no sources), from conftest:
    read only, each test copies it."""
    return built_gpt4_niah_single


def _copy(shard: Path, to: Path) -> Path:
    shutil.copytree(shard, to, symlinks=True)
    return to


def _edit(folder: Path, change) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def _tree(root: Path) -> set[str]:
    """Every path under `root`, links not followed."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


# --- 21.1: nothing is written outside --out ------------------------------------------------------

def _escaping_shard(shard: Path, to: Path) -> tuple[Path, str]:
    """The attack of issue 21.1: an entry of task `lnk/../../../../pwn`, consistent with its
    path, whose file exists in the shard through a symbolic link inside it."""
    evil = _copy(shard, to)
    task = "lnk/../../../../pwn"
    rel = f"data/gpt-4/{task}/1024.parquet"
    (evil / "data/gpt-4/x/y/z/w").mkdir(parents=True)
    (evil / "data/gpt-4/lnk").symlink_to("x/y/z/w")  # lnk/../../../.. = data/gpt-4
    (evil / "data/gpt-4/pwn").mkdir()
    shutil.copyfile(evil / REL, evil / "data/gpt-4/pwn/1024.parquet")
    assert (evil / rel).is_file()  # the shard itself is consistent

    def change(m):
        m["files"][rel] = {**m["files"][REL], "task": task}
    _edit(evil, change)
    return evil, rel


def test_a_shard_entry_that_leaves_the_folder_is_refused_before_a_byte_is_copied(
        shard, tmp_path, capsys):
    evil, rel = _escaping_shard(shard, tmp_path / "evil")
    target = tmp_path / "area" / "out"
    target.parent.mkdir()
    code, err = _cli(capsys, "merge", str(evil), "--out", str(target))
    assert code == 2 and "lnk/../../../../pwn" in err and "unknown task" in err, err
    assert not (tmp_path / "area" / "pwn").exists()  # OUT/../pwn/1024.parquet today
    assert _tree(tmp_path / "area") == set()  # not even OUT was created


@pytest.mark.parametrize("field, value, says", [
    ("task", "../niah_single_1", "unknown task"),
    ("task", "niah_single_1/../niah_single_1", "unknown task"),
    ("config", "gpt-4/..", "as a dataset config name"),
    ("config", "..", "as a dataset config name"),
    ("max_seq_length", -1024, "max_seq_length"),
    ("max_seq_length", "1024", "max_seq_length"),
    ("max_seq_length", True, "max_seq_length"),
    ("max_seq_length", 1024.0, "max_seq_length"),
])
def test_every_reader_refuses_an_entry_that_names_no_split_file(shard, tmp_path, capsys, field,
                                                                 value, says):
    bad = _copy(shard, tmp_path / "bad")

    def change(m):
        entry = {**m["files"].pop(REL), field: value}
        rel = f"data/{entry['config']}/{entry['task']}/{entry['max_seq_length']}.parquet"
        m["files"][rel] = entry
        if field == "config":
            m["builds"][value] = m["builds"]["gpt-4"]
    _edit(bad, change)
    (tmp_path / "p.jsonl").write_text("")  # score reads the dataset's manifest, not this
    with pytest.raises(RulerError, match=says):
        read_manifest(bad)
    for argv in (["merge", str(bad), "--out", str(tmp_path / "m")],
                 ["verify", str(bad), "--no-load", "--workers", "1"],
                 ["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1", "--lengths",
                  "1024", "--samples", "2", "--out", str(bad), "--no-progress"],
                 ["release", str(bad), "--repo", "org/ruler", "--dry-run"],
                 ["score", "--predictions", str(tmp_path / "p.jsonl"), "--data", str(bad)]):
        code, err = _cli(capsys, *argv)
        assert code == 2 and "manifest.json" in err and says in err, (argv, err)
    assert not (tmp_path / "m").exists()


def test_legitimate_config_names_and_lengths_are_read(shard, tmp_path):
    """Variant configs, folder-derived tokenizer names and lengths up to 2M pass the checks."""
    ok = _copy(shard, tmp_path / "ok")

    def change(m):
        entry = m["files"][REL]
        long_name = "t" * 96  # the longest tokenizer config name, plus a variant's suffix
        for config, L, variant in (
                ("gpt-4--depth10", 4096, {"depth_bins": 10}),
                ("gpt-4--out16k", 2097152, {"output_budget": 16384}),
                ("my.tok_v2--out1000", 1024, {"output_budget": 1000}),
                ("Qwen--Qwen3-8B", 131072, None),
                (f"{long_name}--out16k", 1048576, {"output_budget": 16384})):
            m["builds"][config] = {**m["builds"]["gpt-4"],
                                   **({"variant": variant} if variant else {})}
            m["files"][f"data/{config}/vt/{L}.parquet"] = {
                **entry, "config": config, "task": "vt", "max_seq_length": L}
    _edit(ok, change)
    assert len(read_manifest(ok)["files"]) == 6


# --- 21.1 / 21.14: symbolic links inside a build folder -----------------------------------------

def test_a_split_file_reached_through_a_link_out_of_the_shard_is_refused(shard, tmp_path, capsys):
    evil = _copy(shard, tmp_path / "evil")
    outside = tmp_path / "elsewhere"
    shutil.move(evil / "data/gpt-4/niah_single_1", outside)
    (evil / "data/gpt-4/niah_single_1").symlink_to(outside)
    target = tmp_path / "out"
    code, err = _cli(capsys, "merge", str(evil), "--out", str(target))
    assert code == 2 and "symbolic link" in err and "data/gpt-4/niah_single_1" in err, err
    assert not target.exists()


@pytest.mark.parametrize("link", ["data", "data/gpt-4", "data/gpt-4/niah_single_1", REL])
def test_a_linked_folder_in_out_is_refused_before_anything_is_written(shard, tmp_path, capsys,
                                                                      link):
    """Merge and build never write through a link in OUT (the file would land elsewhere), and
    `--overwrite` says it is a link instead of blaming the manifest."""
    out = _copy(shard, tmp_path / "out")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / link, elsewhere)
    (out / link).symlink_to(elsewhere)
    before = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} \
        if elsewhere.is_dir() else {elsewhere: elsewhere.read_bytes()}
    other = tmp_path / "other"
    build(other, "gpt-4", ["vt"], [1024], 2, workers=1)
    for argv in (["merge", str(other), "--out", str(out)],
                 ["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1,vt", "--lengths",
                  "1024", "--samples", "2", "--out", str(out), "--no-progress"],
                 ["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1", "--lengths",
                  "1024", "--samples", "3", "--out", str(out), "--no-progress", "--overwrite"],
                 ["verify", str(out), "--no-load", "--workers", "1"]):
        code, err = _cli(capsys, *argv)
        assert code == 2 and "symbolic link" in err and link in err, (argv, err)
        assert "fix the manifest" not in err
    after = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} \
        if elsewhere.is_dir() else {elsewhere: elsewhere.read_bytes()}
    assert after == before
    assert "vt" not in json.dumps(read_manifest(out)["builds"])


# --- 21.2: two merges into one target at the same time ------------------------------------------

def _merge_procs(inputs: list[Path], out: Path) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-m", "ruler", "merge", str(src), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for src in inputs]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> list[Path]:
    """Two builds of one config with different seeds, several files each."""
    root = tmp_path_factory.mktemp("seeds")
    outs = []
    for seed in (1, 2):
        outs.append(root / f"seed{seed}")
        build(outs[-1], "gpt-4", ["niah_single_1", "niah_single_2", "vt"], [1024], 2, workers=1,
              seed=seed)
    return outs


@pytest.mark.slow  # end to end: two merges in their own processes at once
@pytest.mark.subprocess
def test_two_merges_of_other_identities_at_once_one_refuses(seeds, tmp_path):
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        procs = _merge_procs(seeds, out)
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        codes = sorted(code for code, _, _ in results)
        assert codes == [0, 2], results
        refused = next(err for code, _, err in results if code == 2)
        assert "another build" in refused and "seed" in refused, refused
        manifest = read_manifest(out)
        assert manifest["builds"]["gpt-4"]["seed"] in (1, 2)
        winner = seeds[manifest["builds"]["gpt-4"]["seed"] - 1]
        assert manifest["files"] == read_manifest(winner)["files"]
        for rel in manifest["files"]:
            assert (out / rel).read_bytes() == (winner / rel).read_bytes()
        assert {p.relative_to(out).as_posix() for p in out.rglob("*.parquet")} \
            == set(manifest["files"])
        assert not list(out.rglob("*.tmp"))


@pytest.mark.slow  # end to end: two merges in their own processes at once
@pytest.mark.subprocess
def test_two_merges_of_the_same_rows_at_once_copy_each_file_once(seeds, tmp_path):
    """Overlapping inputs: a file the other merge recorded meanwhile is counted as already
    there, never replaced behind the back of the merge that reported it copied."""
    twin = _copy(seeds[0], tmp_path / "twin")
    n = len(read_manifest(seeds[0])["files"])
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        procs = _merge_procs([seeds[0], twin], out)
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert [code for code, _, _ in results] == [0, 0], results
        copied = [int(o.split(": ")[1].split(" file(s) copied")[0]) for _, o, _ in results]
        assert sum(copied) == n, results
        assert read_manifest(out)["files"] == read_manifest(seeds[0])["files"]
        assert not list(out.rglob("*.tmp"))
