"""Executors, and the local one: run file jobs in this process or in a pool of worker processes.

An executor (`Executor`: the local one here, Ray's in `ray_executor`) only runs work; it never
touches the manifest. Each finished file is handed to `publish(result, entry, temporary_path)`,
which the build supplies: the driver alone publishes and records files.

The pool is a `concurrent.futures.ProcessPoolExecutor`: a worker that dies (the out-of-memory
killer's SIGKILL, a crash in native code) breaks the pool at once, and the build fails within
seconds naming the file that worker was writing, instead of waiting forever for a result that
`multiprocessing.Pool` would never deliver. Workers ignore Ctrl-C; the driver stops them
(and on SIGTERM, which `ruler` handles as Ctrl-C). Workers end with the driver when it is
killed outright (`ruler.kernel.lifeline`).
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from ruler.builder.manifest import FileEntry
from ruler.builder.pipeline.config import FileJob, FileResult
from ruler.builder.pipeline.worker import (
    Worker,
    build_file_in_pool,
    init_pool_process,
    make_row_in_pool,
    write_file,
)
from ruler.kernel.errors import RulerError

#: What an executor hands each finished file to: (its result, its manifest entry, the
#: temporary file beside its final path). The build's publisher moves it into place.
Publish = Callable[[FileResult, FileEntry, Path], None]


class Executor(Protocol):
    """Runs file jobs somewhere and hands each finished file to `publish`, in this process.

    Used as a context manager: entering connects or prepares (a cluster that cannot be
    reached fails there, before OUT is touched); leaving stops whatever still runs and
    removes what it left, also when the build fails or is interrupted. `progress` (a tqdm
    bar or None) is set by the build after entering and counts rows.
    """

    progress: Any

    def __enter__(self) -> "Executor": ...

    def __exit__(self, exc_type, exc, tb) -> None: ...

    def run(self, jobs: Sequence[FileJob], publish: Publish) -> None: ...


class WorkerDied(RulerError):
    """A worker process ended without a result (killed, or crashed in native code)."""

    def __init__(self, files: Sequence[str], how: str):
        self.files = list(files)
        named = ", ".join(self.files) or "a file"
        super().__init__(
            f"a worker process died ({how}) while building {named}; nothing of it was "
            f"published, the files finished before are recorded: run the same command again "
            f"to resume (with fewer --workers if memory ran out)")


class LocalExecutor:
    """Builds files with `workers` processes (`start_method`: fork, spawn or forkserver), or
    in this process when `workers` is 1."""

    def __init__(self, worker: Worker, workers: int, start_method: str, progress=None):
        self.worker, self.workers, self.progress = worker, workers, progress
        self._mp = multiprocessing.get_context(start_method)
        self._pool: ProcessPoolExecutor | None = None
        self._events: multiprocessing.queues.SimpleQueue[Any] | None = None
        self._active: dict[int, str] = {}  # worker pid -> the file it is building
        self._processes: dict = {}  # pid -> Process, seen while running (to read exit codes)

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._pool is not None:
            if exc_type is None:  # every job done: the workers are idle
                self._pool.shutdown(wait=True)
            else:
                _stop(self._pool)
            self._pool = None

    def _start(self, needed: int) -> ProcessPoolExecutor:
        """The pool, of at most `needed` processes: a fork pool starts all of them at once,
        and more than there are jobs would only sit idle."""
        if self._pool is None:
            self._events = self._mp.SimpleQueue()
            self._pool = ProcessPoolExecutor(min(self.workers, needed), mp_context=self._mp,
                                             initializer=init_pool_process,
                                             initargs=(self.worker, self._events,
                                                       os.getpid()))
        return self._pool

    def run(self, jobs: Sequence[FileJob], publish: Publish) -> None:
        if not jobs:
            return
        if self.workers == 1:
            tick = self.progress.update if self.progress is not None else None
            for job in jobs:
                publish(*self.worker.build_file(job, tick))
        elif len(jobs) >= self.workers:
            self._files_in_workers(jobs, publish)
        else:
            self._samples_in_workers(jobs, publish)

    def _files_in_workers(self, jobs: Sequence[FileJob], publish: Publish) -> None:
        """Each worker fits and writes whole files, longest first: no rows cross processes,
        each worker's piece cache serves every sample of its file, and the last files to
        finish are the short ones, so all workers stay busy to the end."""
        pool = self._start(len(jobs))
        ordered = sorted(jobs, key=lambda job: -job.max_seq_length)
        pending: set[Future] = {pool.submit(build_file_in_pool, job) for job in ordered}
        try:
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                self._watch()
                for future in done:
                    publish(*future.result())  # re-raises a worker's error
        except BrokenProcessPool:
            self._watch()
            raise self._died(list(self._active.values())) from None

    def _watch(self) -> None:
        """Drain the workers' events (progress, which file each is on); note the processes."""
        self._processes.update(getattr(self._pool, "_processes", None) or {})
        while self._events is not None and not self._events.empty():
            event = self._events.get()
            if event[0] == "tick":
                if self.progress is not None:
                    self.progress.update(event[1])
            elif event[0] == "start":
                self._active[event[1]] = event[2]
            elif self._active.get(event[1]) == event[2]:
                del self._active[event[1]]

    def _died(self, files: list[str]) -> WorkerDied:
        # The pool's own thread may be reaping the dead process right now: its exit code
        # shows a moment later.
        for _ in range(40):
            codes = {pid: p.exitcode for pid, p in self._processes.items()}
            dead = [pid for pid, code in codes.items()
                    if code not in (None, 0, -signal.SIGTERM)]
            if dead or None not in codes.values():
                break
            time.sleep(0.05)
        named = [self._active[pid] for pid in dead if pid in self._active] or files
        code = codes[dead[0]] if dead else None
        if code is not None and code < 0:
            how = f"killed by {signal.Signals(-code).name}"
            if -code == signal.SIGKILL:
                how += ", as the out-of-memory killer does"
        else:
            how = "exit code unknown" if code is None else f"exit code {code}"
        return WorkerDied(sorted(named), how)

    def _samples_in_workers(self, jobs: Sequence[FileJob], publish: Publish) -> None:
        """Fewer files than workers: files one after another, written here, while the
        workers fit the samples of one stream across all files, so they start the next file
        while the last rows of the current one are still being fitted and written."""
        pool = self._start(sum(job.samples for job in jobs))
        rows = ((job.task, job.max_seq_length, i) for job in jobs for i in range(job.samples))
        window = _window(self.workers, max(job.max_seq_length for job in jobs))
        stream = _bounded_map(pool, make_row_in_pool, rows, window, self._watch)
        tick = self.progress.update if self.progress is not None else None
        for job in jobs:
            try:
                written = write_file(job, itertools.islice(stream, job.samples), tick,
                                     self.worker.temp_tag)
            except BrokenProcessPool:
                self._watch()
                raise self._died([job.path]) from None
            publish(*written)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now, its workers included: `shutdown` alone lets running jobs finish (at
    128K a file takes minutes), and the interpreter would wait for them at exit."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(10)


def _window(workers: int, max_seq_length: int) -> int:
    """Samples in flight: enough that workers keep fitting while the writer compresses a
    row group, few enough that waiting rows (~8 bytes per token with their canonical
    encoding) stay under ~256 MB at any length."""
    return max(2 * workers, min(64, (256 << 20) // (8 * max_seq_length)))


def _bounded_map(pool: ProcessPoolExecutor, fn, calls: Iterable[tuple], window: int,
                 watch: Callable[[], None]) -> Iterator:
    """`fn(*args)` for each `args` of `calls` in the pool, results in order, with at most
    `window` results in flight or waiting: at 1M tokens a row is megabytes, and workers must
    not run ahead of the writer without bound. `watch` runs once the workers are started."""
    pending: collections.deque = collections.deque()
    calls = iter(calls)
    for args in itertools.islice(calls, window):
        pending.append(pool.submit(fn, *args))
    watch()
    while pending:
        result = pending.popleft().result()
        for args in itertools.islice(calls, 1):
            pending.append(pool.submit(fn, *args))
        yield result
