"""`ruler build` under misuse: odd tokenizer paths, a changed identity, builds running into one
folder at once, merges, a folder that cannot be written, one clear line for every bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builds import all_rows, build
from helpers.paths import TOKENIZERS
from ruler.builder.manifest import read_manifest
from ruler.builder.tokenizer_registry import check_config_name, config_name
from ruler.builder.verify.run import verify
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

TASKS = ("niah_single_1", "vt")  # no sources to load: quick


def _tokenizer_copy(tmp_path: Path, name: str = "mytok", source: str = "llama-2") -> Path:
    """A tokenizer folder outside the registry (SentencePiece by default: quick to load)."""
    folder = tmp_path / "toks" / name
    shutil.copytree(TOKENIZERS / source, folder)
    return folder


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".manifest.lock"}


# --- finding 2: config names, and the builder deletes only its own files ------------------------

@pytest.mark.parametrize("bad", ["..", ".", "", "-", "x..y", "../.."])
def test_config_names_that_could_leave_data_are_refused(bad):
    with pytest.raises(RulerError, match="as a dataset config name"):
        config_name(bad)
    with pytest.raises(RulerError, match="as a dataset config name"):
        check_config_name("a/b")  # a name read from a manifest is checked as it is


@pytest.mark.build
def test_a_tokenizer_path_ending_in_dotdot_builds_under_its_folders_name(tmp_path):
    folder = _tokenizer_copy(tmp_path)
    (folder / "sub").mkdir()
    out = tmp_path / "out"
    (out / "data" / "other").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "data" / "other" / "keep.parquet").write_bytes(b"not the builder's")
    build(out, str(folder / "sub" / ".."), ["niah_single_1"], [1024], 2, workers=1)
    assert set(read_manifest(out)["files"]) == {"data/mytok/niah_single_1/1024.parquet"}
    build(out, str(folder / "sub" / ".."), ["niah_single_1"], [1024], 2, workers=1, seed=7,
          overwrite=True)  # replaces the config's files, and nothing else
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "data" / "other" / "keep.parquet").read_bytes() == b"not the builder's"
    assert read_manifest(out)["builds"]["mytok"]["seed"] == 7


@pytest.mark.build
def test_overwrite_deletes_only_files_the_manifest_lists(tmp_path):
    out = tmp_path / "out"
    build(out, "gpt-4", TASKS, [1024], 2, workers=1)
    stray = out / "data" / "gpt-4" / "niah_single_1" / "mine.txt"
    stray.write_text("a user's file inside the config's folder")
    build(out, "gpt-4", ["niah_single_1"], [1024], 3, workers=1, overwrite=True)
    assert stray.read_text().startswith("a user's file")
    assert set(read_manifest(out)["files"]) == {"data/gpt-4/niah_single_1/1024.parquet"}
    assert not (out / "data/gpt-4/vt").exists()  # emptied folders go too


@pytest.mark.build
def test_a_hand_edited_manifest_never_makes_the_builder_delete_elsewhere(tmp_path):
    out = tmp_path / "out"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep")
    m = json.loads((out / "manifest.json").read_text())
    m["files"]["data/gpt-4/../../../precious.txt"] = dict(
        m["files"]["data/gpt-4/niah_single_1/1024.parquet"])
    (out / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RulerError, match="not a split file of it"):
        build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1, seed=3, overwrite=True)
    assert victim.read_text() == "keep"


# --- finding 3: another identity refuses; a new task or length of the same build is added -------

@pytest.mark.build
def test_a_changed_samples_or_seed_refuses_and_keeps_every_earlier_file(tmp_path, capsys):
    out = tmp_path / "ruler"
    build(out, "gpt-4", TASKS, [1024], 3, workers=1)
    before = _files(out)
    for flags, what in ((["--samples", "10"], "samples 3 -> 10"),
                        (["--samples", "3", "--seed", "1"], "seed 42 -> 1")):
        code = main(["build", "--tokenizer", "gpt-4", "--tasks", "niah_multikey_2",
                     "--lengths", "1024", "--out", str(out), "--no-progress", *flags])
        err = capsys.readouterr().err
        assert code == 2 and what in err and "--overwrite" in err, err
        assert _files(out) == before
    build(out, "gpt-4", ["niah_multikey_2"], [1024], 3, workers=1)  # same build: simply added
    files = read_manifest(out)["files"]
    assert len(files) == 3 and all(_files(out)[rel] == data for rel, data in before.items()
                                   if rel.startswith("data/"))


@pytest.mark.slow
def test_a_changed_tokenizer_under_the_same_name_refuses(tmp_path):
    folder = _tokenizer_copy(tmp_path, source="llama-3.1")  # a chat template to change
    out = tmp_path / "out"
    build(out, str(folder), ["niah_single_1"], [1024], 2, workers=1)
    config = folder / "tokenizer_config.json"
    cfg = json.loads(config.read_text())
    cfg["chat_template"] = cfg["chat_template"].replace("user", "User", 1)
    config.write_text(json.dumps(cfg))
    with pytest.raises(RulerError, match="tokenizer hash"):
        build(out, str(folder), ["niah_single_1"], [1024], 2, workers=1)


@pytest.mark.build
def test_a_complete_build_is_left_exactly_as_it_is(tmp_path):
    out = tmp_path / "out"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    stamp = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    report = build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    assert all(f.skipped for f in report.files)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == stamp


# --- finding 4: builds into one folder at once all end up recorded; merge ---------------------

@pytest.mark.build
def test_a_build_that_runs_while_another_publishes_keeps_the_others_files(tmp_path, monkeypatch):
    """B reads the manifest, then A builds other tasks into the same folder while B fits;
    B's files are recorded next to A's, none lost (the last writer used to win)."""
    from ruler.builder.pipeline.worker import Worker

    out = tmp_path / "out"
    real = Worker.make_row
    state = {"done": False}

    def other_build_meanwhile(self, task, L, index):
        if not state["done"]:
            state["done"] = True
            monkeypatch.setattr(Worker, "make_row", real)
            build(out, "gpt-4", ["niah_multikey_2", "vt"], [1024], 2, workers=1)
            monkeypatch.setattr(Worker, "make_row", other_build_meanwhile)
        return real(self, task, L, index)

    monkeypatch.setattr(Worker, "make_row", other_build_meanwhile)
    build(out, "gpt-4", ["niah_single_1"], [1024, 2048], 2, workers=1)
    files = read_manifest(out)["files"]
    assert sorted(files) == sorted([
        "data/gpt-4/niah_single_1/1024.parquet", "data/gpt-4/niah_single_1/2048.parquet",
        "data/gpt-4/niah_multikey_2/1024.parquet", "data/gpt-4/vt/1024.parquet"])
    assert read_manifest(out)["builds"]["gpt-4"]["tasks"] == ["niah_single_1",
                                                              "niah_multikey_2", "vt"]
    assert verify(out, load=False).ok


@pytest.mark.build
def test_a_build_with_another_identity_that_starts_meanwhile_stops_cleanly(tmp_path,
                                                                         monkeypatch):
    from ruler.builder.pipeline.worker import Worker

    out = tmp_path / "out"
    real = Worker.make_row
    state = {"done": False}

    def other_seed_meanwhile(self, task, L, index):
        if not state["done"]:
            state["done"] = True
            monkeypatch.setattr(Worker, "make_row", real)
            build(out, "gpt-4", ["vt"], [1024], 2, workers=1, seed=5)
            monkeypatch.setattr(Worker, "make_row", other_seed_meanwhile)
        return real(self, task, L, index)

    monkeypatch.setattr(Worker, "make_row", other_seed_meanwhile)
    with pytest.raises(RulerError, match="another build recorded config 'gpt-4'"):
        build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    assert list(read_manifest(out)["files"]) == ["data/gpt-4/vt/1024.parquet"]
    assert not [p for p in out.rglob("*.tmp")]


@pytest.mark.slow
def test_shards_built_at_the_same_time_into_one_folder_are_all_recorded(tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", "gpt-4",
            "--tasks", "niah_single_1,niah_single_2,vt", "--lengths", "1024,2048",
            "--samples", "3", "--workers", "1", "--no-progress", "--out", str(out)]
    procs = [subprocess.Popen([*argv, "--shard", f"{i}/2"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert len(read_manifest(out)["files"]) == 6
    report = verify(out)
    assert report.ok, report.all_problems()


@pytest.mark.build
def test_shards_built_apart_merge_into_the_full_build(tmp_path, capsys):
    full = tmp_path / "full"
    build(full, "gpt-4", TASKS, [1024], 2, workers=1)
    parts = []
    for i in range(2):
        parts.append(tmp_path / f"s{i}")
        build(parts[-1], "gpt-4", TASKS, [1024], 2, workers=1, shard=(i, 2))
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, parts), "--out", str(merged)]) == 0
    assert "2 file(s) copied" in capsys.readouterr().out
    assert all_rows(merged) == all_rows(full)
    m, f = read_manifest(merged), read_manifest(full)
    assert m["files"] == f["files"]
    assert m["builds"]["gpt-4"] == f["builds"]["gpt-4"]
    assert verify(merged, load=False).ok
    assert main(["merge", *map(str, parts), "--out", str(merged)]) == 0  # again: nothing to do
    assert "0 file(s) copied, 2 already there" in capsys.readouterr().out


@pytest.mark.build
def test_merge_refuses_another_identity_and_conflicting_files(tmp_path, capsys):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    build(a, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    build(b, "gpt-4", ["niah_multikey_2"], [1024], 2, workers=1, seed=9)
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 2
    assert "seed 42 -> 9" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()  # checked before anything is written
    shutil.copytree(a, c)
    m = json.loads((c / "manifest.json").read_text())
    m["files"]["data/gpt-4/niah_single_1/1024.parquet"]["content_sha256"] = "0" * 64
    (c / "manifest.json").write_text(json.dumps(m))
    assert main(["merge", str(a), str(c), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "conflicting file data/gpt-4/niah_single_1/1024.parquet" in err
    assert not (tmp_path / "m").exists()


# --- finding 10: one clear line, non-zero exit, nothing written ---------------------------------

def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(["build", "--no-progress", "--samples", "2", "--lengths", "1024",
                 "--tasks", "niah_single_1", *argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_out_that_is_a_file_is_one_clear_error(tmp_path, capsys):
    (tmp_path / "out").write_text("a file")
    code, err = _cli(capsys, "--tokenizer", "gpt-4", "--out", str(tmp_path / "out"))
    assert code == 2 and "is a file, not a folder" in err
    assert (tmp_path / "out").read_text() == "a file"


def test_a_truncated_tokenizer_folder_is_one_clear_error(tmp_path, capsys):
    folder = _tokenizer_copy(tmp_path, source="llama-3.1")
    config = folder / "tokenizer_config.json"
    config.write_bytes(config.read_bytes()[:100])
    code, err = _cli(capsys, "--tokenizer", str(folder), "--out", str(tmp_path / "out"))
    assert code == 2 and f"cannot load the tokenizer in {folder}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("spec", ["./no-such-tokenizer", "/nonexistent/dir/tok", "~/nope/tok"])
def test_a_tokenizer_folder_that_does_not_exist_says_so(tmp_path, capsys, spec):
    code, err = _cli(capsys, "--tokenizer", spec, "--out", str(tmp_path / "out"))
    assert code == 2 and f"tokenizer folder {spec} does not exist" in err
    assert "revision" not in err


@pytest.mark.network
def test_gpt4o_offline_names_the_download_and_the_offline_folder(tmp_path, capsys, monkeypatch):
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # loaded by earlier tests
    monkeypatch.delenv("RULER_TOKENIZERS")
    monkeypatch.setenv("RULER_TOKENIZER_CACHE", str(tmp_path / "cache"))
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # refused at once: no network here
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    code, err = _cli(capsys, "--tokenizer", "gpt-4o", "--out", str(tmp_path / "out"))
    assert code == 2 and "could not load the o200k_base encoding" in err
    assert "RULER_TOKENIZERS" in err and "tiktoken/o200k_base.tiktoken" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


class ReadOnly:
    """Make a folder unwritable, also for root (who ignores permission bits): `chattr +i`."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.paths = [folder, *(p for p in folder.rglob("*") if p.is_dir())]

    def __enter__(self):
        if os.geteuid() != 0:
            for p in self.paths:
                p.chmod(0o555)
            return self
        done = subprocess.run(["chattr", "+i", *map(str, self.paths)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a folder read-only here: {done.stderr!r}")
        return self

    def __exit__(self, *exc):
        if os.geteuid() != 0:
            for p in self.paths:
                p.chmod(0o755)
        else:
            subprocess.run(["chattr", "-i", *map(str, self.paths)], check=True)


@pytest.mark.build
@pytest.mark.subprocess
def test_a_read_only_folder_builds_nothing_and_says_so_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    before = _files(out)
    with ReadOnly(out):
        code, err = _cli(capsys, "--tokenizer", "gpt-4", "--out", str(out))  # up to date
        assert code == 0, err
        code, err = _cli(capsys, "--tokenizer", "gpt-4", "--out", str(out), "--tasks", "vt")
        assert code == 2 and f"cannot write to {out}" in err
        assert len(err.strip().splitlines()) == 1
    assert _files(out) == before


@pytest.mark.build
def test_one_sample_at_a_length_near_a_tasks_minimum_builds(tmp_path):
    """preflight with --samples 1 where the smallest sample takes over half of L (vt at 1K:
    ~770 tokens) used to fail with a TypeError."""
    report = build(tmp_path, "gpt-4", ["vt"], [1024], 1, workers=1)
    assert report.files[0].rows == 1


# --- finding 7: versions of the packages that shape content are identity ---------------------

@pytest.mark.build
def test_a_resumed_build_after_a_package_upgrade_refuses_instead_of_mixing(tmp_path,
                                                                          monkeypatch):
    import ruler.builder.pipeline.recipe as recipe  # where a build's identity is made
    from ruler.builder.packages import content_packages

    out = tmp_path / "out"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    recorded = read_manifest(out)
    assert recorded["builds"]["gpt-4"]["packages"] == content_packages("tiktoken")
    assert all(f["packages"] == content_packages("tiktoken")
               for f in recorded["files"].values())  # recorded per file too
    upgraded = dict(content_packages("tiktoken"), numpy="99.0.0")
    monkeypatch.setattr(recipe, "content_packages", lambda kind: upgraded)
    with pytest.raises(RulerError, match=r"package versions \(numpy .* -> 99\.0\.0\)"):
        build(out, "gpt-4", ["vt"], [1024], 2, workers=1)
    assert read_manifest(out) == recorded


# --- issue 21.9: temporary files a killed build left behind -------------------------------------

def _ended_pid() -> int:
    """The pid of a process that has ended (reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


@pytest.mark.build
@pytest.mark.subprocess
def test_stale_temporary_files_are_reported_by_verify_and_removed_by_the_next_build(tmp_path):
    """A build killed with SIGKILL leaves `.<L>.parquet.<pid>-<tag>.<random>.tmp` files that no
    run removed and verify did not see. A later build removes those whose build has ended,
    only under data/; a running build's own (its process is alive), another machine's
    (its process cannot be checked from here) and a user's files are kept."""
    out = tmp_path / "out"
    build(out, "gpt-4", ["niah_single_1"], [1024], 2, workers=1)
    folder = out / "data" / "gpt-4" / "niah_single_1"
    dead, host = _ended_pid(), "other-machine.example"
    stale = folder / f".1024.parquet.{dead}-0123abcd.k2j4h5g6.tmp"
    live = folder / f".1024.parquet.{os.getpid()}-89abcdef.a1b2c3d4.tmp"
    elsewhere = folder / f".1024.parquet.{host}-{dead}-0123abcd.z9y8x7w6.tmp"
    mine = folder / "notes.tmp"
    outside = out / f".1024.parquet.{dead}-0123abcd.q1w2e3r4.tmp"
    for path in (stale, live, elsewhere, mine, outside):
        path.write_bytes(b"PAR1 half a file")
    report = verify(out, load=False)
    assert not report.ok
    flagged = [p for p in report.all_problems() if "temporary file" in str(p)]
    assert len(flagged) == 1 and stale.name in str(flagged[0]), report.all_problems()
    build(out, "gpt-4", ["niah_single_1", "vt"], [1024], 2, workers=1)  # has work to do
    assert not stale.exists()
    assert live.exists() and elsewhere.exists() and mine.exists() and outside.exists()
    live.unlink()
    elsewhere.unlink()
    mine.unlink()
    assert verify(out, load=False).ok


# --- issue 21.12: a full disk or a folder made read-only mid-build; impossible sizes -----------

@pytest.fixture()
def small_disk(tmp_path):
    """A real file system that fills up: a 96 KiB tmpfs (mounting needs root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _ruler(*argv: str, script: str | None = None) -> subprocess.CompletedProcess:
    """`ruler ...` in a process of its own: a failure that aborts or leaks cannot take the
    test process with it."""
    head = [sys.executable, "-c", script] if script else [sys.executable, "-m", "ruler"]
    return subprocess.run([*head, *argv], capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # end to end: a build filling a small disk, in its own process
@pytest.mark.subprocess
@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(small_disk, workers):
    """pyarrow aborted the process on ENOSPC (a failed Check in its writer), so the build
    said a worker was killed by SIGABRT, or died with it when it wrote itself."""
    out = small_disk / "out"
    argv = ("build", "--tokenizer", "gpt-4", "--tasks", "cwe,fwe", "--lengths", "16384",
            "--samples", "40", "--workers", str(workers), "--no-progress", "--out", str(out))
    done = _ruler(*argv)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "No space left on device" in done.stderr and ".parquet" in done.stderr
    assert not list(small_disk.rglob("*.tmp"))
    recorded = set(read_manifest(out)["files"]) if (out / "manifest.json").exists() else set()
    assert {p.relative_to(out).as_posix() for p in out.glob("data/**/*.parquet")} == recorded
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    again = _ruler(*argv)  # space freed: the same command resumes
    assert again.returncode == 0, again.stderr
    assert len(read_manifest(out)["files"]) == 2 and verify(out, load=False).ok


READ_ONLY_AT_PUBLISH = r"""
import os, subprocess, sys
from ruler.builder.pipeline.publish import Publisher

real = Publisher.publish

def publish(self, result, entry, written):
    # The folder becomes read-only between writing the file and moving it into place.
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(written.parent)]).returncode != 0:
            sys.exit(99)
    else:
        written.parent.chmod(0o555)
    return real(self, result, entry, written)

Publisher.publish = publish
from ruler.commands.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # end to end: a build in its own process, stopped midway
@pytest.mark.subprocess
def test_a_folder_made_read_only_mid_build_is_one_line_naming_the_first_error(tmp_path):
    """The temporary file's removal then failed too, and its error hid the first."""
    out = tmp_path / "out"
    argv = ("build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1", "--lengths", "1024",
            "--samples", "2", "--workers", "1", "--no-progress", "--out", str(out))
    folder = out / "data" / "gpt-4" / "niah_single_1"
    try:
        done = _ruler(*argv, script=READ_ONLY_AT_PUBLISH)
        if done.returncode == 99:
            pytest.skip("cannot make a folder read-only here (chattr)")
    finally:
        if folder.is_dir():
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(folder)], check=True)
            folder.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"cannot write {folder / '1024.parquet'}" in done.stderr
    assert ("Operation not permitted" in done.stderr) or ("Permission denied" in done.stderr)
    assert not (folder / "1024.parquet").exists()
    assert not read_manifest(out)["files"]
    again = _ruler(*argv)  # writable again: the same command builds, and cleans up
    assert again.returncode == 0, again.stderr
    assert not list(out.rglob("*.tmp")) and verify(out, load=False).ok


@pytest.mark.parametrize("flags, named", [
    (["--lengths", "99999999999999999999999"], "--lengths"),
    (["--tasks", "vt", "--lengths", "1000000000"], "--lengths"),
    (["--lengths", "4096,3m"], "--lengths"),
    (["--samples", str(10 ** 22)], "--samples"),
    (["--samples", "1000001"], "--samples"),
    (["--workers", str(10 ** 20)], "--workers"),
], ids=["overflow", "1e9-vt", "3m", "1e22-samples", "1e6+1-samples", "1e20-workers"])
def test_impossible_sizes_are_refused_before_anything_is_created(tmp_path, capsys, flags, named):
    """These failed with OverflowError after creating folders, MemoryError after minutes and
    gigabytes, an islice ValueError, or forked processes until the machine gave out."""
    out = tmp_path / "out"
    code = main(["build", "--tokenizer", "gpt-4", "--tasks", "niah_single_1", "--no-progress",
                 "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"ruler: error: {named}") and "at most" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_build_help_states_the_size_limits(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "at most 2M" in text and "at most 1,000,000" in text
