"""`ruler eval` as a process among others: its render workers die with it, however it dies,
and two runs never share one results folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.fake_openai import MODEL, FakeServer
from ruler.commands.main import main
from ruler.kernel.errors import RulerError

pytestmark = [pytest.mark.subprocess]

CONFIG = "qwen2.5"
TASKS = ("niah_single_1",)

linux_proc = pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                                reason="reads process tables from /proc")


@pytest.fixture(scope="module")
def data(built_qwen_niah) -> Path:
    return built_qwen_niah  # CONFIG: TASKS x 1024 x 4 samples (conftest; read only)


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children(pid: int) -> set[int]:
    kids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) == pid:
                kids.add(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie has exited


def _eval_cmd(data: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ruler", "eval", "--model", MODEL, "--model-tokenizer",
            CONFIG, "--data", str(data), "--tokenizer-config", CONFIG, "--backend", "openai",
            "--base-url", url, "--out", str(out), "--no-progress", "--no-report",
            "--concurrency", "1", "--retries", "0", *extra]


def _wait_for_first_request(server: FakeServer, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not server.attempts:
        assert proc.poll() is None, f"ruler eval exited early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "ruler eval sent no request within 120 s"
        time.sleep(0.05)


@pytest.mark.build
@pytest.mark.network
@linux_proc
@pytest.mark.parametrize("sig", [
    # end to end (an eval in its own process, killed): one signal in the fast tier
    pytest.param(signal.SIGTERM, id="term", marks=pytest.mark.slow),
    pytest.param(signal.SIGKILL, id="kill-9")])
def test_a_killed_eval_leaves_no_render_worker_behind(data, tmp_path, sig):
    """SIGTERM and kill -9 run none of the driver's clean-up: the render pool's workers
    must notice on their own and exit (within a few seconds, not never)."""
    log = tmp_path / "eval.log"
    workers: set[int] = set()
    # Answers take a minute: the run is killed while it waits on the server.
    with FakeServer(lambda prompt, attempt: (200, {}, 60.0)) as server, \
            open(log, "w") as log_fh:
        proc = subprocess.Popen(_eval_cmd(data, tmp_path / "r", server.url,
                                          "--render-workers", "2"),
                                stdout=log_fh, stderr=subprocess.STDOUT)
        try:
            _wait_for_first_request(server, proc, log)  # rendered: the pool is running
            workers = _children(proc.pid)
            assert len(workers) == 2, f"expected the 2 render workers, found {workers}"
            proc.send_signal(sig)
            proc.wait(timeout=30)
            deadline = time.monotonic() + 15
            while any(map(_alive, workers)) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = sorted(w for w in workers if _alive(w))
            assert not left, f"render worker(s) {left} outlived the killed ruler eval"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for w in workers:  # only the processes this test started
                if _alive(w):
                    os.kill(w, signal.SIGKILL)


_SPAWNED_STREAM = """
import sys, time
from ruler.builder.tokenizer_registry import load_tokenizer
from ruler.eval.records.dataset import open_dataset
from ruler.eval.render import Renderer
from ruler.eval.stream import PromptStream
ds = open_dataset(sys.argv[1])
stream = PromptStream(ds, ds.files(sys.argv[2]), Renderer(load_tokenizer(sys.argv[2]), "chat"),
                      workers=2, start_method="spawn")
next(stream)
open(sys.argv[3], "w").close()  # rendered: the pool is running
time.sleep(300)
"""


@linux_proc
@pytest.mark.slow  # spawned workers load the tokenizer again (~10 s)
def test_spawned_render_workers_die_with_a_killed_driver(data, tmp_path):
    ready, log = tmp_path / "ready", tmp_path / "driver.log"
    with open(log, "w") as log_fh:
        proc = subprocess.Popen([sys.executable, "-c", _SPAWNED_STREAM, str(data), CONFIG,
                                 str(ready)], stdout=log_fh, stderr=subprocess.STDOUT)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, f"the driver exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "nothing rendered within 120 s"
            time.sleep(0.05)
        # spawn adds multiprocessing's resource tracker beside the two workers
        workers = _children(proc.pid)
        assert len(workers) >= 2
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


@pytest.mark.slow  # end to end: two evals in their own processes
@pytest.mark.build
@pytest.mark.network
@linux_proc
def test_a_second_eval_into_a_busy_results_folder_refuses_at_once(data, tmp_path, capsys):
    """Two runs into one --out would both generate every row and leave duplicate keys: the
    second refuses in one line before any request. The lock dies with its holder: after a
    kill -9 the next run goes ahead."""
    first_request: list = []

    def policy(prompt, attempt):  # the first request of all hangs; the rest are quick
        if not first_request:
            first_request.append(tuple(prompt))
        return 200, {}, 60.0 if tuple(prompt) == first_request[0] and attempt == 0 else 0.0

    out, log = tmp_path / "r", tmp_path / "first.log"
    workers: set[int] = set()
    with FakeServer(policy) as server, open(log, "w") as log_fh:
        args = _eval_cmd(data, out, server.url, "--render-workers", "1")
        proc = subprocess.Popen(args, stdout=log_fh, stderr=subprocess.STDOUT)
        try:
            _wait_for_first_request(server, proc, log)
            workers = _children(proc.pid)
            assert main(args[3:]) == 2
            err = capsys.readouterr().err.strip()
            assert err.count("\n") == 0 and str(out) in err and "another `ruler eval`" in err
            assert sum(server.attempts.values()) == 1  # the second run sent nothing
            proc.kill()  # kill -9: no clean-up runs, the OS drops the lock
            proc.wait(timeout=30)
            deadline = time.monotonic() + 15  # its render worker follows it
            while any(map(_alive, workers)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert main(args[3:]) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for w in workers:
                if _alive(w):
                    os.kill(w, signal.SIGKILL)
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all('"status": "ok"' in x for x in lines)


_HOLDER = """
import os, sys, time
from pathlib import Path
from ruler.eval.records.results_folder import hold_results_folder
with hold_results_folder(Path(sys.argv[1])):
    if os.fork() == 0:  # a child that outlives its parent, as an engine process might
        time.sleep(60)
        os._exit(0)
    open(sys.argv[2], "w").close()
    time.sleep(300)
"""


@linux_proc
def test_a_child_of_a_killed_run_does_not_keep_its_folder_locked(tmp_path):
    from ruler.eval.records.results_folder import hold_results_folder

    out, ready = tmp_path / "r", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), str(ready)])
    child = None
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (child,) = _children(proc.pid)
        with pytest.raises(RulerError, match="in use by another `ruler eval` run"):
            with hold_results_folder(out):
                pass
        proc.kill()
        proc.wait(timeout=30)
        assert _alive(child)
        with hold_results_folder(out):  # the orphan holds no lock
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
