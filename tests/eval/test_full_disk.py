"""A full disk (issue 40, item 17): `ruler eval`, `score`, `report` and `export kvpress` say it in
one line naming the file (an `OSError [Errno 28]` traceback before), leave no temporary file or
staging folder, and the same command run again once there is space finishes with what a run on
a roomy disk gives. The disk is real: a small tmpfs (mounting needs root; skipped otherwise),
filled with a file that leaves a chosen number of bytes free."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ruler.commands.main import main


@pytest.fixture()
def disk(tmp_path):
    """A 4 MiB tmpfs, and `fill(leave)`: leave that many bytes free (whole 4 KiB pages)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path, leave: int) -> Path:
    filler = mount / "filler"
    st = os.statvfs(mount)
    with open(filler, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, st.f_bavail * st.f_frsize - leave)
    return filler


def _ruler(*argv: str) -> subprocess.CompletedProcess:
    """`ruler ...` in a process of its own (a writer that aborts cannot take the tests)."""
    return subprocess.run([sys.executable, "-m", "ruler", *argv], capture_output=True,
                          text=True, timeout=120)


def _left_behind(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.name.endswith(".tmp") or (p.name.startswith(".")
                                                 and p.name != ".ruler-eval.lock"))


def _one_line_naming(done: subprocess.CompletedProcess, where: Path) -> str:
    err = done.stderr.strip()
    assert done.returncode == 2, done.stderr
    assert len(err.splitlines()) == 1, err  # no traceback
    assert err.startswith(f"ruler: error: {where}") and "No space left on device" in err, err
    assert "run the same command again" in err
    return err


@pytest.fixture(scope="module")
def roomy_run(built_qwen_niah, tmp_path_factory):
    """The same evaluation on a disk with room: what a resumed run must end with."""
    out = tmp_path_factory.mktemp("roomy") / "run"
    assert main(["eval", "--model", "m", "--backend", "fake", "--data", str(built_qwen_niah),
                 "--out", str(out), "--no-progress"]) == 0
    return out


def _predictions(run: Path) -> list[dict]:
    """Each row's record but its timing, in row order."""
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        r.pop("elapsed_s")
    return sorted(records, key=lambda r: (r["task"], r["max_seq_length"], r["index"]))


def _same_results(run: Path, roomy: Path) -> None:
    assert _predictions(run) == _predictions(roomy)  # every row once, none torn
    for name in ("report.csv", "report_depth.csv"):
        assert (run / name).read_text() == (roomy / name).read_text(), name


@pytest.mark.build
@pytest.mark.subprocess
@pytest.mark.parametrize("leave,fails_at", [(4096, "predictions.jsonl"), (16384, None)])
def test_eval_on_a_full_disk_is_one_line_and_resumes(disk, built_qwen_niah, roomy_run, leave,
                                                     fails_at):
    """4 KiB free: run.json fits, the predictions do not; 16 KiB: the report does not."""
    run = disk / "run"
    filler = _fill(disk, leave)
    argv = ("eval", "--model", "m", "--backend", "fake", "--data", str(built_qwen_niah),
            "--out", str(run), "--no-progress")
    err = _one_line_naming(_ruler(*argv), run)
    if fails_at:
        assert f"{run / fails_at}:" in err
    assert _left_behind(disk) == []
    filler.unlink()
    again = _ruler(*argv)
    assert again.returncode == 0, again.stderr
    _same_results(run, roomy_run)


@pytest.mark.build
@pytest.mark.subprocess
def test_score_and_report_on_a_full_disk_are_one_line_and_run_again(disk, built_qwen_niah,
                                                                    roomy_run):
    out = disk / "scored"
    filler = _fill(disk, 0)
    argv = ("score", "--predictions", str(roomy_run / "predictions.jsonl"), "--data",
            str(built_qwen_niah), "--out", str(out), "--no-plots")
    _one_line_naming(_ruler(*argv), out)
    assert _left_behind(disk) == []
    filler.unlink()
    assert _ruler(*argv).returncode == 0
    assert (out / "report.csv").read_text() == (roomy_run / "report.csv").read_text()

    report = disk / "report"
    shutil.copytree(roomy_run, report, ignore=shutil.ignore_patterns("report*", "*.png",
                                                                     "depth_heatmaps"))
    filler = _fill(disk, 0)
    _one_line_naming(_ruler("report", str(report), "--no-plots"), report)
    assert _left_behind(disk) == []
    filler.unlink()
    assert _ruler("report", str(report), "--no-plots").returncode == 0
    assert (report / "report.csv").read_text() == (roomy_run / "report.csv").read_text()


@pytest.mark.build
@pytest.mark.subprocess
def test_export_kvpress_on_a_full_disk_is_one_line_and_leaves_no_staging(disk,
                                                                         built_qwen_niah):
    out = disk / "kvpress"
    filler = _fill(disk, 8192)
    argv = ("export", "kvpress", str(built_qwen_niah), "--out", str(out))
    _one_line_naming(_ruler(*argv), out)
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # no staging, no folder
    filler.unlink()
    assert _ruler(*argv).returncode == 0
    assert (out / "1024" / "test-00000-of-00001.parquet").is_file()
