"""Worker processes that die or are interrupted: the build ends within seconds, says what
happened in one line, leaves nothing half-written, and a re-run resumes.

Each build runs in its own process group (a real `ruler build`), so a hang fails the test at
its timeout instead of hanging the suite, and Ctrl-C reaches driver and workers as it does in
a terminal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ruler.builder.manifest import read_manifest
from ruler.builder.verify.run import verify

# A build whose workers die (SIGKILL, as the OOM killer sends) when they start `victim`'s
# sample 1: patched before the workers fork, so they inherit it.
DYING_BUILD = r"""
import os, signal, sys
from ruler.builder.pipeline.worker import Worker

victim = sys.argv[1]
real = Worker.make_row

def make_row(self, task, L, index):
    if task == victim and index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, task, L, index)

Worker.make_row = make_row
from ruler.commands.main import main
sys.exit(main(sys.argv[2:]))
"""


def _run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{argv[:4]} did not finish within {timeout} s")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _build_args(out: Path, tasks: str, workers: int = 2) -> list[str]:
    return ["build", "--tokenizer", "gpt-4", "--tasks", tasks, "--lengths", "1024",
            "--samples", "3", "--workers", str(workers), "--no-progress", "--out", str(out)]


def _leftovers(out: Path) -> list[Path]:
    return [p for p in out.rglob("*.tmp")]


@pytest.mark.slow
@pytest.mark.parametrize("tasks", ["niah_single_1,vt", "vt"],
                         ids=["files-in-workers", "samples-in-workers"])
def test_a_killed_worker_fails_the_build_naming_the_file_and_a_rerun_resumes(tmp_path, tasks):
    out = tmp_path / "out"
    started = time.monotonic()
    done = _run([sys.executable, "-c", DYING_BUILD, "vt", *_build_args(out, tasks)])
    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert "a worker process died (killed by SIGKILL" in done.stderr
    assert "data/gpt-4/vt/1024.parquet" in done.stderr and "Traceback" not in done.stderr
    assert elapsed < 90  # it used to wait forever
    recorded = set(read_manifest(out)["files"]) if (out / "manifest.json").exists() else set()
    assert "data/gpt-4/vt/1024.parquet" not in recorded
    assert not _leftovers(out)
    on_disk = {p.relative_to(out).as_posix() for p in out.glob("data/**/*.parquet")}
    assert on_disk == recorded
    again = _run([sys.executable, "-m", "ruler", *_build_args(out, tasks)])
    assert again.returncode == 0, again.stderr
    assert len(read_manifest(out)["files"]) == len(tasks.split(","))
    assert verify(out, load=False).ok


@pytest.mark.slow
def test_ctrl_c_stops_driver_and_workers_with_one_line(tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", "gpt-4",
            "--tasks", "niah_single_1,niah_single_2", "--lengths", "16384", "--samples", "160",
            "--workers", "2", "--no-progress", "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not _leftovers(out) and time.monotonic() < deadline:  # workers are writing
        time.sleep(0.1)
    assert _leftovers(out), "the build never started writing"
    assert proc.poll() is None, "the build ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the build did not stop within 60 s of Ctrl-C")
    assert proc.returncode == 130, err
    assert err.strip() == "ruler: interrupted", err
    assert not _leftovers(out)
    time.sleep(1)  # the workers are gone: nothing appears after the driver exited
    assert not _leftovers(out)


# --- issue 21.9: a driver killed with SIGTERM or SIGKILL takes its workers with it ---------------

def _children(pid: int) -> set[int]:
    """Live processes whose parent is `pid` (from /proc: Linux)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[0] != "Z"  # a zombie has ended: it only waits to be reaped


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_driver_leaves_no_worker_and_no_temporary_file_behind(tmp_path, sig,
                                                                       start_method):
    """Only the driver gets the signal (`kill PID`, a job scheduler, the OOM killer), not its
    process group: its workers used to keep running under PID 1 for a minute and more, and
    their temporary files stayed in OUT for good."""
    out = tmp_path / "out"
    # large enough that both workers are still writing when the driver is killed (at 40
    # samples a file took well under a second once fitting tallied its probes)
    argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", "gpt-4",
            "--tasks", "niah_single_1,niah_single_2", "--lengths", "16384", "--samples", "160",
            "--workers", "2", "--start-method", start_method, "--no-progress", "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_leftovers(out)) < 2 and time.monotonic() < deadline:  # both are writing
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert len(_leftovers(out)) == 2 and len(workers) >= 2, "the workers never started"
        os.kill(proc.pid, sig)  # the driver alone
        proc.wait(timeout=60)
        deadline = time.monotonic() + 10
        while any(_running(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _running(w)], "workers outlived their driver"
        _, err = proc.communicate(timeout=60)  # their ends of the pipes are closed too
    finally:
        try:  # the session's processes, the driver's orphaned workers included
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
    if sig == signal.SIGTERM:  # handled as Ctrl-C is: workers stopped, temporary files removed
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert err.strip() == "ruler: terminated", err
        assert not _leftovers(out)
    again = _run([sys.executable, "-m", "ruler", *argv[3:]], timeout=300)
    assert again.returncode == 0, again.stderr
    assert not _leftovers(out)  # what the killed build left is removed by the next one
    assert verify(out, load=False).ok
