"""The Ray executor: build files on a Ray cluster, publish them here as the local executor does.

`ruler build --executor ray [--ray-address ADDR]`. Ray is imported only here, and only when
the executor runs: the package imports and builds without it.

Each Ray worker is an actor (`FileBuilder`) holding one `Worker`, sent once per actor as a
spawned pool process gets it (`Worker.__reduce__`: the build recipe with its tokenizer as a
load recipe, the context with its resolved sources, resources dropped), so it loads the
tokenizer and corpora once and keeps its piece caches across the files it builds. A file job
is one call to the actor, a Ray generator that fits and writes the whole file on the worker's
own node (a node elsewhere cannot write this machine's OUT), then streams it back: one item
per row (progress), the file's result and manifest entry, then its bytes in chunks. This
process writes the chunks to a temporary file beside the final path, checks its size and
sha256 against the entry and hands it to `publish`, the local executor's path: files appear
whole, are recorded under the manifest lock, and an interrupted build resumes. The rows are
the local executor's rows (same `Worker`).

Why a stream of fixed items: at 1M tokens a file of 500 rows is ~800 MB, which chunks keep
out of the workers' memory; and Ray retries a generator by running it again and skipping the
items the caller already received, which is only right when every attempt yields the same
items (one per row, then the file's chunks; the bytes are deterministic).

What a user sees (restarts, the refusals before any work, the same install and paths on every
node) is docs/building.md's "On a Ray cluster": a worker re-runs a file up to RETRIES times;
an error of the build itself (RulerError) is not retried, since it would fail again.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence

from ruler.builder import __version__
from ruler.builder.manifest import FileEntry
from ruler.builder.packages import FILE_PACKAGES, content_packages, installed_versions
from ruler.builder.pipeline.config import FileJob, FileResult
from ruler.builder.pipeline.executor import Publish
from ruler.builder.pipeline.worker import Worker, worker_name, write_file_steps
from ruler.catalog.sources import recheck
from ruler.kernel.atomic import FILE_MODE, temp_file_beside
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256
from ruler.kernel.lifeline import process_running

#: Re-runs of a file whose Ray worker died (or whose node was lost) before the build gives up.
RETRIES = 3
#: Pings of a failed Ray worker (2, 4, 8 ... s apart) before the build goes on without it.
REVIVE_PINGS = 6
#: Bytes per streamed chunk: small next to a worker's memory, large next to Ray's per-object cost.
CHUNK_BYTES = 32 << 20
#: Seconds to wait for the first Ray worker to start (the cluster may have no free CPU).
START_TIMEOUT = 300.0
#: Environment variables a worker takes from this process: where ruler finds tokenizers,
#: sources and its cache, and whether the Hub may be reached (never credentials).
FORWARDED_ENV_PREFIXES = ("RULER_",)
FORWARDED_ENV = ("HF_HUB_OFFLINE", "HF_ENDPOINT")
#: Scratch folders of Ray workers: ruler-ray-<pid>-*, removed when their process is gone.
SCRATCH_PREFIX = "ruler-ray-"
#: The Ray concurrency group of a worker's control calls (`close`): its own thread, so a
#: worker busy building a file still answers at once when the build stops.
CONTROL_GROUP = "control"

# Stream items (tuples; the first element says which).
ROW = ("row",)


def environment(*tokenizer_kinds: str) -> dict[str, str]:
    """What must be equal on every node for its rows and files to be this process's: the
    ruler version, the packages that shape rows (the build identity's: those of the
    tokenizer's `content_kinds`) and those that shape file bytes (pyarrow)."""
    return {"ruler": __version__, **content_packages(*tokenizer_kinds),
            **installed_versions(FILE_PACKAGES)}


def forwarded_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k.startswith(FORWARDED_ENV_PREFIXES) or k in FORWARDED_ENV}
    return {**env, "TOKENIZERS_PARALLELISM": "false"}  # we parallelise by process


# --- on a Ray worker (a plain class: Ray wraps it in RayExecutor.run) -------------------------

class FileBuilder:
    """Builds whole files on one Ray worker and streams them back (see the module docstring).

    `pickled_worker` is `pickle.dumps(worker)`: unpickled here, after the driver's environment
    is set, so the tokenizer loads the way the driver's did. Nothing here raises at start-up:
    problems are reported by `ready()` and refuse every file.
    """

    def __init__(self, pickled_worker: bytes, env: dict[str, str], expected: dict[str, str]):
        os.environ.update(env)
        self.where = _where()
        self.problems: list[str] = []
        self.worker: Worker | None = None
        self.closed = threading.Event()
        _remove_stale_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        try:
            self.worker = pickle.loads(pickled_worker)
        except Exception as e:  # a tokenizer or package this node cannot load
            self.problems.append(f"cannot load the build here: {e}")
            return
        ours = environment(*self.worker.recipe.tokenizer.identity.content_kinds)
        differs = [f"{k} {ours.get(k, 'not installed')} (the driver has {v})"
                   for k, v in sorted(expected.items()) if ours.get(k) != v]
        if differs:
            self.problems.append("other versions here: " + ", ".join(differs))
        for source in self.worker.ctx.used_sources().values():
            problem = recheck(source)
            if problem:
                self.problems.append(problem)

    def ready(self) -> dict[str, Any]:
        return {"where": self.where, "problems": self.problems}

    def build_file(self, job: FileJob) -> Iterator[tuple]:
        """Fit and write `job` here (in this worker's scratch folder, not the driver's OUT),
        then yield ROW per row, ("file", result, entry) and ("chunk", offset, bytes) until
        the file is sent."""
        if self.problems or self.worker is None:
            raise RulerError(f"Ray worker {self.where} cannot build: {'; '.join(self.problems)}")
        worker = self.worker
        rows = self._rows(worker, job)
        path = None
        try:
            steps = write_file_steps(replace(job, out=self.scratch), rows, worker.temp_tag)
            result, entry, path = yield from _row_items(steps)
            result.worker = self.where
            yield ("file", result, entry)
            with open(path, "rb") as f:
                offset = 0
                while data := f.read(CHUNK_BYTES):
                    yield ("chunk", offset, data)
                    offset += len(data)
        finally:
            if path is not None:
                path.unlink(missing_ok=True)
            if self.closed.is_set():  # the writer may have re-made folders after close()
                shutil.rmtree(self.scratch, ignore_errors=True)

    def _rows(self, worker: Worker, job: FileJob):
        for i in range(job.samples):
            if self.closed.is_set():
                raise RulerError(f"Ray worker {self.where} was closed")
            yield worker.make_row(job.task, job.max_seq_length, i)

    def close(self) -> None:
        """Remove the scratch folder. Runs in the control group's thread, beside a file being
        built: that build stops at its next row (its writer removes its temporary file)."""
        self.closed.set()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _row_items(steps):
    """Yield ROW for each row `steps` writes; return what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        yield ROW


def _where() -> str:
    """node address:pid of this Ray worker (host:pid outside Ray)."""
    try:
        import ray

        return f"{ray.util.get_node_ip_address()}:{os.getpid()}"
    except Exception:
        return worker_name()


def _remove_stale_scratch() -> None:
    """Remove scratch folders of Ray workers on this node whose process is gone (killed
    workers cannot clean up after themselves)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        try:
            pid = int(folder.name[len(SCRATCH_PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if not process_running(pid):
            shutil.rmtree(folder, ignore_errors=True)


# --- on the driver ----------------------------------------------------------------------------

class Arrival:
    """One file arriving from a Ray worker: its chunks are written at their offsets to a
    temporary file beside the final path in `job.out` (named like the build's other temporary
    files, so the build removes it if it stops), checked against the entry, then handed over."""

    def __init__(self, job: FileJob, temp_tag: str):
        self.final = Path(job.out) / job.path
        self.job, self.temp_tag = job, temp_tag
        self.result: FileResult | None = None
        self.entry: FileEntry | None = None
        self.path: Path | None = None
        self._fd: int | None = None

    def add(self, item: tuple) -> int:
        """Take one stream item; returns the rows it reports (for progress)."""
        kind = item[0]
        if kind == "row":
            return 1
        if kind == "file":
            self.result, self.entry = item[1], item[2]
            self._open()
        elif kind == "chunk":
            if self._fd is None:
                raise RulerError(f"{self.job.path}: bytes arrived before the file's entry")
            os.pwrite(self._fd, item[2], item[1])
        else:
            raise RulerError(f"{self.job.path}: unknown item {kind!r} from a Ray worker")
        return 0

    def _open(self) -> None:
        if self._fd is not None:
            return
        self._fd, self.path = temp_file_beside(self.final, self.temp_tag)

    def finish(self) -> tuple[FileResult, FileEntry, Path]:
        """The file, complete and checked: (result, entry, temporary path) for `publish`."""
        path = self.path  # set with `_fd`
        if self.result is None or self.entry is None or self._fd is None or path is None:
            self.discard()
            raise RulerError(f"{self.job.path}: the Ray worker's stream ended before the file")
        os.close(self._fd)
        self._fd = None
        size = path.stat().st_size
        if size != self.entry.bytes or file_sha256(path) != self.entry.sha256:
            self.discard()
            raise RulerError(f"{self.job.path} arrived from its Ray worker with other bytes "
                             f"than it hashed ({size} of {self.entry.bytes} bytes); nothing "
                             f"of it was published: run the same command again to resume")
        os.chmod(path, FILE_MODE)
        return self.result, self.entry, path

    def discard(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


class RayExecutor:
    """Builds files on Ray workers (at most `workers`, default one per cluster CPU) of the
    cluster at `address` (else $RAY_ADDRESS, else a Ray instance started here)."""

    def __init__(self, worker: Worker, address: str | None = None, workers: int | None = None,
                 progress=None):
        self.worker, self.address, self.workers, self.progress = worker, address, workers, progress
        self._ray: Any = None  # the ray module, imported on entering (an optional dependency)
        self._started_ray = False
        self._actors: list = []
        self._arrivals: list[Arrival] = []
        self._running: dict = {}  # streams of the files being built (the schedule's)

    # -- connecting -----------------------------------------------------------------------

    def __enter__(self) -> "RayExecutor":
        self._ray = _import_ray()
        ray = self._ray
        if ray.is_initialized():  # a caller's own connection (a notebook, a test)
            return self
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address is not None:
            _check_reachable(address)  # else Ray retries for minutes
        try:
            if address is None:
                ray.init(num_cpus=self.workers, include_dashboard=False,
                         logging_level="WARNING", log_to_driver=True)
            else:
                ray.init(address=address, logging_level="WARNING", log_to_driver=True)
        except Exception as e:  # ConnectionError, an auth error, a version mismatch ...
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            text = " ".join(str(e).split())
            first = str(e).strip().splitlines()[0] if text else type(e).__name__
            if "auth" in text.lower():
                first += (" (it requires token authentication: set RAY_AUTH_TOKEN to the "
                          "cluster's token, or put it in ~/.ray/auth_token)")
            raise RulerError(f"cannot connect to {where}: {first}") from None
        self._started_ray = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        ray = self._ray
        for arrival in self._arrivals:
            arrival.discard()
        if ray is None:
            return
        # Stop the files still running (their writers remove their temporary files), then
        # let the workers remove their scratch folders; a worker that does not answer soon
        # is killed all the same (its folder goes when a worker next starts on its node).
        for stream in self._running:
            with contextlib.suppress(Exception):
                ray.cancel(stream)
        with contextlib.suppress(Exception):
            ray.get([close_actor(a) for a in self._actors],
                    timeout=30 if exc_type is None else 5)
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    # -- running --------------------------------------------------------------------------

    def run(self, jobs: Sequence[FileJob], publish: Publish) -> None:
        if not jobs:
            return
        ray = self._ray
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if cpus < 1:
            raise RulerError("the Ray cluster has no CPUs to run on")
        # Ray restarts a worker whenever it dies (any node with a free CPU); this process
        # re-runs the file it was building, RETRIES times at most per file. Ray's own re-run
        # of calls (max_task_retries) is off: after a lost node a streaming call fails with
        # ActorUnavailableError instead of being re-run, so one place counts every attempt.
        builder = actor_class(ray)
        pickled = pickle.dumps(self.worker)
        expected = environment(*self.worker.recipe.tokenizer.identity.content_kinds)
        env = forwarded_env()
        self._actors = [builder.remote(pickled, env, expected)
                        for _ in range(min(len(jobs), self.workers or cpus))]
        _Schedule(self, jobs, publish, cpus).run()

    def release(self, actor) -> None:
        """Let an idle worker remove its scratch folder, then end it (its CPU is free)."""
        ray = self._ray
        with contextlib.suppress(Exception):
            ray.get(close_actor(actor), timeout=30)
        ray.kill(actor, no_restart=True)
        self._actors.remove(actor)


def actor_class(ray):
    """FileBuilder as the Ray actor class a build runs: one CPU each; Ray restarts a worker
    that dies, this process alone re-runs its file (see `RayExecutor.run`); `close` in a
    control thread of its own (`CONTROL_GROUP`)."""
    return ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0,
                      concurrency_groups={CONTROL_GROUP: 1})(FileBuilder)


def close_actor(actor):
    """`actor.close()` in its control thread: answered even while the actor builds a file."""
    return actor.close.options(concurrency_group=CONTROL_GROUP).remote()


class _Schedule:
    """The driver's loop: files longest first to whichever worker is ready, items of the
    running files as they come, failed files re-run on a restarted (or another) worker."""

    def __init__(self, executor: RayExecutor, jobs: Sequence[FileJob], publish: Publish,
                 cpus: int):
        self.ex, self.ray = executor, executor._ray
        self.publish, self.cpus = publish, cpus
        self.queue = collections.deque(sorted(jobs, key=lambda job: -job.max_seq_length))
        self.attempts: dict[str, int] = collections.Counter()
        self.running = executor._running  # generator -> (actor, Arrival)
        self.starting: dict = {}  # ready() call -> (actor, pings so far)
        self.revive: list = []  # (when, actor, pings): a failed worker, pinged again later
        self.ever_ready = False
        for actor in executor._actors:
            self.starting[actor.ready.remote()] = (actor, 0)

    def run(self) -> None:
        ray, deadline = self.ray, time.monotonic() + START_TIMEOUT
        while self.queue or self.running:
            now = time.monotonic()
            for due in [r for r in self.revive if r[0] <= now]:
                self.revive.remove(due)
                self.starting[due[1].ready.remote()] = (due[1], due[2])
            waiting = [*self.starting, *self.running]
            if not waiting and not self.revive:
                raise RulerError(f"no Ray worker is left to build "
                                 f"{', '.join(job.path for job in self.queue)}")
            if not waiting:  # only failed workers, pinged again soon
                time.sleep(0.2)
                continue
            done, _ = ray.wait(waiting, num_returns=1, timeout=1.0)
            if not done:
                if not self.ever_ready and time.monotonic() > deadline:
                    raise RulerError(f"no Ray worker started within {START_TIMEOUT:.0f} s: "
                                     f"the cluster has {self.cpus} CPU(s), none free for "
                                     f"this build")
                continue
            if done[0] in self.starting:
                self._ready(done[0])
            else:
                self._item(done[0])

    def _ready(self, ref) -> None:
        actor, pings = self.starting.pop(ref)
        try:
            info = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError:
            raise
        except self.ray.exceptions.RayError as e:
            if not self.ever_ready and pings == 0 and isinstance(
                    e, self.ray.exceptions.ActorDiedError):
                raise RulerError(f"a Ray worker could not start: {_reason(e)}") from None
            if pings >= REVIVE_PINGS:  # it does not come back: build with the others
                self.ex.release(actor)
                return
            self.revive.append((time.monotonic() + 2 ** pings, actor, pings + 1))
            return
        if info["problems"]:
            raise RulerError(f"Ray worker {info['where']} cannot build this config: "
                             f"{'; '.join(info['problems'])}")
        self.ever_ready = True
        self._start(actor)

    def _start(self, actor) -> None:
        if not self.queue:  # free its CPU: a worker restarted after a failure may need it
            self.ex.release(actor)
            return
        job = self.queue.popleft()
        arrival = Arrival(job, self.ex.worker.temp_tag)
        self.ex._arrivals.append(arrival)
        self.running[actor.build_file.remote(job)] = (actor, arrival)

    def _item(self, stream) -> None:
        ray = self.ray
        actor, arrival = self.running[stream]
        try:
            try:
                item = ray.get(next(stream))
            except StopIteration:
                item = None
        except ray.exceptions.RayTaskError as e:  # the build's own error: it would recur
            cause = getattr(e, "cause", None)
            if isinstance(cause, RulerError):
                raise RulerError(str(cause)) from None
            raise
        except ray.exceptions.RayError as e:  # the worker or its node died
            self._failed(stream, actor, arrival, e)
            return
        if item is None:  # the file is complete
            del self.running[stream]
            self.publish(*arrival.finish())
            self.ex._arrivals.remove(arrival)
            self._start(actor)
            return
        rows = arrival.add(item)
        if rows and self.ex.progress is not None:
            self.ex.progress.update(rows)

    def _failed(self, stream, actor, arrival: Arrival, error: Exception) -> None:
        """Discard what arrived of the file; build it again (first in line) unless it failed
        too often; ping the worker until Ray has restarted it."""
        del self.running[stream]
        arrival.discard()
        self.ex._arrivals.remove(arrival)
        job = arrival.job
        self.attempts[job.path] += 1
        if self.attempts[job.path] > RETRIES:
            raise RulerError(
                f"building {job.path} failed on the Ray cluster {self.attempts[job.path]} "
                f"times, the last: {_reason(error)}; nothing of it was published, the files "
                f"finished before are recorded: run the same command again to resume (on "
                f"nodes with more memory if memory ran out)")
        self.queue.appendleft(job)
        self.starting[actor.ready.remote()] = (actor, 1)


def _reason(error: Exception) -> str:
    """What happened, in a few words, from one of Ray's (long, multi-line) errors."""
    name, text = type(error).__name__, " ".join(str(error).split())
    if "OOM" in text or "out of memory" in text.lower():
        return f"its worker ran out of memory ({name})"
    if name == "ActorUnavailableError":
        return f"its worker became unreachable: process killed or node lost ({name})"
    if name == "ActorDiedError":
        return f"its worker died ({name})"
    if name in ("ObjectLostError", "ObjectFetchTimedOutError", "OwnerDiedError"):
        return f"a part of the file was lost with its node ({name})"
    return f"{name}: {text[:120]}"


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fail at once, in one line, when nothing answers at a cluster's host:port ('auto',
    'local' and addresses without a port are left to Ray)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise RulerError(f"cannot reach the Ray cluster at {address}: "
                         f"{e.strerror or type(e).__name__}; start it (`ray start --head`) or "
                         f"check --ray-address / $RAY_ADDRESS") from None


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RulerError("--executor ray needs Ray: pip install 'ruler-bench[ray]' (on every "
                         "node of the cluster too)") from None
    return ray
