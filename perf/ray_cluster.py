"""A real two-node Ray cluster on this machine, for the Ray executor's tests and benchmark.

Two `ray start --block` processes, as a user starts a cluster: a head and one worker node
joining it at 127.0.0.1:<port>, each with one CPU, its own ports, temporary folder and process
group, and token authentication with a token of their own (nothing else on the machine can
join or connect). Ray advertises the machine's own interface address for its nodes (it
rewrites loopback addresses on Linux), so nothing leaves the machine either way. Start-up is
bounded; `stop()` kills every process of both nodes, their Ray workers included.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (Ray's workers start sessions of their own, so process
    groups do not find them)."""
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


class RayCluster:
    def __init__(self, cpus_per_node: int = 1):
        # Unix socket paths under the temp folder must stay short (~107 characters).
        self.root = Path(tempfile.mkdtemp(prefix="rr", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus = cpus_per_node
        self.env = {**os.environ, "RAY_AUTH_MODE": "token",
                    "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
        self.head: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None

    def _ray_start(self, name: str, args: list[str]) -> subprocess.Popen:
        ports = [f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
                 f"--dashboard-agent-listen-port={free_port()}",
                 f"--dashboard-agent-grpc-port={free_port()}",
                 f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}"]
        ray = str(Path(sys.executable).with_name("ray"))
        log = open(self.root / f"{name}.log", "w")
        return subprocess.Popen(
            [ray, "start", "--block", *args, f"--num-cpus={self.cpus}",
             "--object-store-memory=268435456", "--disable-usage-stats",
             f"--temp-dir={self.root / name}", *ports],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_started(self, name: str, proc: subprocess.Popen, deadline: float) -> None:
        log = self.root / f"{name}.log"
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"ray {name} node did not start:\n{tail}")
            time.sleep(0.2)

    def start(self) -> "RayCluster":
        deadline = time.monotonic() + START_TIMEOUT
        self.head = self._ray_start("head", ["--head", f"--port={self.port}",
                                             "--include-dashboard=false",
                                             f"--ray-client-server-port={free_port()}"])
        self._wait_started("head", self.head, deadline)
        self.worker = self._ray_start("worker", [f"--address={self.address}"])
        self._wait_started("worker", self.worker, deadline)
        return self

    def nodes(self) -> dict[int, str]:
        """Every process of the cluster now -> its node, 'head' or 'worker'."""
        return {pid: name for name, proc in (("head", self.head), ("worker", self.worker))
                if proc is not None for pid in {proc.pid} | descendants(proc.pid)}

    def pids(self) -> set[int]:
        return {p for proc in (self.head, self.worker) if proc is not None
                for p in {proc.pid} | descendants(proc.pid)}

    def kill_worker_node(self) -> None:
        """Node loss: every process of the worker node dies at once."""
        _kill({self.worker.pid} | descendants(self.worker.pid))
        self.worker.wait(30)
        self.worker = None

    def stop(self) -> None:
        pids = self.pids()
        _kill(pids)
        for proc in (self.worker, self.head):
            if proc is not None:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    pass
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.head = self.worker = None
        shutil.rmtree(self.root, ignore_errors=True)
        for pid in pids:  # scratch folders of Ray workers killed by the tests
            for folder in Path(tempfile.gettempdir()).glob(f"ruler-ray-{pid}-*"):
                shutil.rmtree(folder, ignore_errors=True)


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone, only not yet reaped
