"""`ruler build --executor ray` on a real two-node Ray cluster started here
(perf/ray_cluster.py):
the files equal the local executor's byte for byte, a killed worker or a lost node is retried
and the build still completes with the same files, and a file that keeps failing ends the build
with one line and nothing half-written.

Each build is a real `ruler build` process connecting with --ray-address; the test watches the
cluster's processes meanwhile (which Ray worker builds which file: its scratch folder
/tmp/ruler-ray-<pid>-*/ holds the file it is writing) and kills them as the OOM killer or a
lost machine would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers.builds import build
from perf.ray_cluster import RayCluster

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.engines]

TOKENIZER = "llama-3.1"
SEVERAL_TASKS = "niah_single_1,niah_multikey_2,vt,cwe,fwe,qa_1"


#: Samples a file of the 16K builds: enough that a file is still being written when a test
#: looks for a worker to kill (at 12, a file took a fraction of a second once fitting tallied
#: its probes, and a test could miss every file).
LARGE_SAMPLES = 40


@pytest.fixture(scope="module")
def cluster():
    c = RayCluster().start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory):
    """The local executor's files for every task and length the tests build."""
    small, large = tmp_path_factory.mktemp("local-small"), tmp_path_factory.mktemp("local-large")
    build(small, TOKENIZER, SEVERAL_TASKS.split(","), [4096, 32768], 8)
    build(large, TOKENIZER, ["niah_single_2", "qa_1", "vt"], [16384], LARGE_SAMPLES)
    return {rel: entry for out in (small, large)
            for rel, entry in json.loads((out / "manifest.json").read_text())["files"].items()}


def _scratch_files() -> dict[int, list[str]]:
    """Ray worker pid -> the split files it is writing now (from its scratch folder)."""
    found: dict[int, list[str]] = {}
    try:
        temps = list(Path(tempfile.gettempdir()).glob("ruler-ray-*-*/data/*/*/*.tmp"))
    except OSError:  # a folder went away while it was listed: look again next time
        return {}
    for tmp in temps:
        pid = int(tmp.parts[len(Path(tempfile.gettempdir()).parts)].split("-")[2])
        rel = "/".join(tmp.parts[-4:-1]) + "/" + tmp.name.split(".parquet.")[0][1:] + ".parquet"
        found.setdefault(pid, []).append(rel)
    return found


class Build:
    """A `ruler build --executor ray` process, watched: `nodes` maps every Ray worker pid
    seen building to its node, `building` maps it to the files it was seen writing."""

    def __init__(self, cluster: RayCluster, out: Path, tasks: str, lengths: str, samples: int):
        self.cluster, self.out = cluster, out
        argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", TOKENIZER, "--tasks", tasks,
                "--lengths", lengths, "--samples", str(samples), "--no-progress",
                "--executor", "ray", "--ray-address", cluster.address, "--out", str(out)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=cluster.env, start_new_session=True)
        self.nodes: dict[int, str] = {}
        self.building: dict[int, set[str]] = {}

    def watch(self) -> dict[int, list[str]]:
        """Ray workers of this cluster writing a file now; notes every cluster process's node."""
        self.nodes.update(self.cluster.nodes())
        now = {pid: files for pid, files in _scratch_files().items() if pid in self.nodes
               and _running(pid)}
        for pid, files in now.items():
            self.building.setdefault(pid, set()).update(files)
        return now

    def wait(self, timeout: float = 300) -> tuple[int, str, str]:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.communicate()
                pytest.fail(f"the Ray build did not finish within {timeout} s")
            self.watch()
            time.sleep(0.1)
        out, err = self.proc.communicate()
        return self.proc.returncode, out, err


def _built_by(stdout: str) -> dict[str, int]:
    """file -> pid of the Ray worker the CLI says built it."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^  (data/\S+): .*, on Ray worker \S+:(\d+)$", stdout, re.M)}


def _same_files(out: Path, reference: dict) -> None:
    files = json.loads((out / "manifest.json").read_text())["files"]
    assert files, "nothing was built"
    for rel, entry in files.items():
        assert entry["content_sha256"] == reference[rel]["content_sha256"], rel
        assert entry["sha256"] == reference[rel]["sha256"], rel  # the very bytes
    assert not list(out.rglob("*.tmp"))


def _running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def test_a_two_node_ray_build_equals_the_local_build(cluster, local_reference, tmp_path):
    run = Build(cluster, tmp_path / "out", SEVERAL_TASKS, "4096,32768", 8)
    code, out, err = run.wait()
    assert code == 0, err
    _same_files(tmp_path / "out", local_reference)
    built_by = _built_by(out)
    assert len(built_by) == 12
    # both nodes built files (each has one CPU, so one Ray worker each)
    assert {run.nodes.get(pid) for pid in built_by.values()} == {"head", "worker"}
    from ruler.builder.verify.run import verify

    assert verify(tmp_path / "out", load=False).ok


def test_a_killed_ray_worker_is_retried_and_the_build_completes_with_equal_files(
        cluster, local_reference, tmp_path):
    run = Build(cluster, tmp_path / "out", "niah_single_2,qa_1,vt", "16384", LARGE_SAMPLES)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and run.proc.poll() is None and time.monotonic() < deadline:
        for pid, files in run.watch().items():
            victim, victim_file = pid, files[0]
            _kill(pid)  # what the OOM killer does, mid-file
            break
        time.sleep(0.05)
    assert victim is not None, "no Ray worker was seen building"
    code, out, err = run.wait()
    assert code == 0, err
    _same_files(tmp_path / "out", local_reference)
    built_by = _built_by(out)
    # the file the killed worker was writing was built again, by its restarted worker
    assert victim_file in built_by and built_by[victim_file] != victim
    assert not list(Path(tempfile.gettempdir()).glob(f"ruler-ray-{victim}-*"))


def test_a_file_that_keeps_failing_ends_the_build_with_one_line_and_nothing_written(
        cluster, tmp_path):
    out_dir = tmp_path / "out"
    run = Build(cluster, out_dir, "niah_single_2", "16384", LARGE_SAMPLES)
    killed: set[int] = set()
    deadline = time.monotonic() + 240
    while run.proc.poll() is None and time.monotonic() < deadline:
        for pid in run.watch():
            if pid not in killed:
                killed.add(pid)
                _kill(pid)
        time.sleep(0.05)
    code, out, err = run.wait(timeout=60)
    assert code == 2, (out, err)
    line = [x for x in err.splitlines() if x.startswith("ruler:")]
    assert len(line) == 1 and "building data/llama-3.1/niah_single_2/16384.parquet failed on " \
        "the Ray cluster" in line[0], err
    assert "Traceback" not in err
    assert len(killed) == 4  # the first attempt and its three retries
    assert not list(out_dir.rglob("*.tmp")) and not list(out_dir.rglob("*.parquet"))
    manifest = out_dir / "manifest.json"
    assert not manifest.exists() or not json.loads(manifest.read_text())["files"]


def test_a_lost_node_is_retried_on_the_other_node(local_reference, tmp_path):
    cluster = RayCluster().start()
    try:
        run = Build(cluster, tmp_path / "out", "niah_single_2,qa_1,vt", "16384", LARGE_SAMPLES)
        lost = None
        deadline = time.monotonic() + 120
        while lost is None and run.proc.poll() is None and time.monotonic() < deadline:
            for pid, files in run.watch().items():
                if run.nodes.get(pid) == "worker":
                    lost = files[0]
                    cluster.kill_worker_node()
                    break
            time.sleep(0.05)
        assert lost is not None, "the worker node was never seen building"
        code, out, err = run.wait()
        assert code == 0, err
        _same_files(tmp_path / "out", local_reference)
        assert run.nodes[_built_by(out)[lost]] == "head"
    finally:
        cluster.stop()


def test_ctrl_c_stops_the_ray_build_and_its_workers_cleanly(cluster, tmp_path):
    out_dir = tmp_path / "out"
    run = Build(cluster, out_dir, "niah_single_2,qa_1", "32768", 30)
    deadline = time.monotonic() + 120
    while not run.watch() and run.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    building = run.watch()
    assert building, "no Ray worker was seen building"
    assert run.proc.poll() is None, "the build ended before it could be interrupted"
    os.killpg(run.proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    code, _, err = run.wait(timeout=60)
    assert code == 130 and err.strip().splitlines()[-1] == "ruler: interrupted", err
    assert not list(out_dir.rglob("*.tmp"))
    time.sleep(1)
    for pid in building:  # the workers are gone, their scratch folders with them
        assert not _running(pid) or pid not in cluster.nodes()
        assert not list(Path(tempfile.gettempdir()).glob(f"ruler-ray-{pid}-*"))


def test_an_unreachable_cluster_fails_at_once_before_out_is_touched(tmp_path):
    out_dir = tmp_path / "out"
    argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", TOKENIZER, "--tasks", "vt",
            "--lengths", "4096", "--samples", "2", "--no-progress", "--executor", "ray",
            "--ray-address", "127.0.0.1:1", "--out", str(out_dir)]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and time.monotonic() - started < 60
    assert done.stderr.strip() == ("ruler: error: cannot reach the Ray cluster at 127.0.0.1:1: "
                                   "Connection refused; start it (`ray start --head`) or check "
                                   "--ray-address / $RAY_ADDRESS")
    assert not out_dir.exists()


def _raylets() -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
            and (p / "comm").exists() and _read(p / "comm") == "raylet"}


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def test_without_an_address_a_ray_instance_is_started_here_and_stopped(local_reference,
                                                                     tmp_path):
    before = _raylets()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(tmp_path / "home")  # Ray keeps a token for local instances in ~/.ray
    argv = [sys.executable, "-m", "ruler", "build", "--tokenizer", TOKENIZER, "--tasks",
            "niah_single_1,cwe", "--lengths", "4096", "--samples", "8", "--no-progress",
            "--executor", "ray", "--workers", "2", "--out", str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    _same_files(tmp_path / "out", local_reference)
    deadline = time.monotonic() + 30
    while _raylets() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _raylets() - before  # its Ray instance is gone with it


BUSY_WORKER = """
import json, os, pickle, sys, time
from pathlib import Path
import ray
from ruler.builder.pipeline import BuildConfig
from ruler.builder.pipeline.config import FileJob
from ruler.builder.pipeline.ray_executor import actor_class, close_actor, environment, forwarded_env
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.pipeline.worker import Worker
from ruler.builder.tokenizer_registry import load_tokenizer

ray.init(address=sys.argv[1], logging_level="ERROR")
tok = load_tokenizer("llama-3.1")
worker = Worker(BuildRecipe.from_config(BuildConfig(tokenizer="llama-3.1"), tok), temp_tag="t")
actor = actor_class(ray).remote(pickle.dumps(worker), forwarded_env(),
                                environment(*tok.identity.content_kinds))
job = FileJob(Path("unused"), "llama-3.1", "niah_single_2", 32768, 2000, "key",
              packages={}, tokenizer_pinned=True)
stream = actor.build_file.remote(job)
ray.get(next(stream))  # the first row is built: the worker is busy with the file
started = time.monotonic()
try:
    ray.get(close_actor(actor), timeout=5)
    answered = time.monotonic() - started
except ray.exceptions.GetTimeoutError:
    answered = None
try:  # the file stops at its next row
    for item in stream:
        ray.get(item)
    ended = "finished"
except Exception as e:
    ended = type(e).__name__ + ": " + str(e).splitlines()[-1]
where = ray.get(actor.ready.remote())["where"]
print(json.dumps({"answered": answered, "ended": ended, "pid": where}))
"""


def test_a_worker_busy_with_a_file_closes_at_once_and_removes_its_scratch(cluster):
    """Ctrl-C's path on the driver gives busy workers a few seconds to close: `close` runs in
    its own thread, not queued behind a file that may take minutes."""
    done = subprocess.run([sys.executable, "-c", BUSY_WORKER, cluster.address], env=cluster.env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["answered"] is not None and got["answered"] < 5, got
    assert "was closed" in got["ended"], got
    pid = int(got["pid"].rsplit(":", 1)[1])
    assert not list(Path(tempfile.gettempdir()).glob(f"ruler-ray-{pid}-*"))
