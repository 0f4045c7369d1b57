"""The local executor: run file jobs in this process or in a pool of worker processes.

Executors only run work; they never touch the manifest. Each finished file is handed to
`publish(result, entry, temporary_path)`, which the build supplies: the driver alone publishes
and records files.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from ruler.builder.build.config import FileJob, FileResult
from ruler.builder.build.worker import (Worker, build_file_in_pool, init_pool_process,
                                        make_row_in_pool, write_file)

Publish = Callable[[FileResult, dict, Path], None]


class LocalExecutor:
    """Builds files with `workers` processes (`start_method`: fork, spawn or forkserver), or
    in this process when `workers` is 1."""

    def __init__(self, worker: Worker, workers: int, start_method: str, progress=None):
        self.worker, self.workers, self.progress = worker, workers, progress
        self._mp = multiprocessing.get_context(start_method)
        self._pool = None
        self._ticks = None

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def _start(self):
        if self._pool is None:
            if self.progress is not None:  # workers report progress through this queue
                self._ticks = self._mp.SimpleQueue()
            self._pool = self._mp.Pool(self.workers, initializer=init_pool_process,
                                       initargs=(self.worker, self._ticks))
        return self._pool

    def run(self, out: Path, config: str, jobs: Sequence[FileJob], samples: int,
            publish: Publish) -> None:
        if not jobs:
            return
        if self.workers == 1:
            tick = self.progress.update if self.progress is not None else None
            for job in jobs:
                publish(*self.worker.build_file(out, config, job, samples, tick))
        elif len(jobs) >= self.workers:
            self._files_in_workers(out, config, jobs, samples, publish)
        else:
            self._samples_in_workers(out, config, jobs, samples, publish)

    def _files_in_workers(self, out: Path, config: str, jobs: Sequence[FileJob], samples: int,
                          publish: Publish) -> None:
        """Each worker fits and writes whole files, longest first: no rows cross processes,
        each worker's piece cache serves every sample of its file, and the last files to
        finish are the short ones, so all workers stay busy to the end."""
        pool = self._start()
        ordered = sorted(jobs, key=lambda job: -job.max_seq_length)
        pending = [pool.apply_async(build_file_in_pool, ((out, config, job, samples),))
                   for job in ordered]
        while pending:
            for done in [r for r in pending if r.ready()]:
                pending.remove(done)
                publish(*done.get())  # re-raises a worker's error
            self._drain_ticks()
            if pending:
                pending[0].wait(0.2)

    def _drain_ticks(self) -> None:
        while self._ticks is not None and not self._ticks.empty():
            self.progress.update(self._ticks.get())

    def _samples_in_workers(self, out: Path, config: str, jobs: Sequence[FileJob],
                            samples: int, publish: Publish) -> None:
        """Fewer files than workers: files one after another, written here, while the
        workers fit the samples of one stream across all files, so they start the next file
        while the last rows of the current one are still being fitted and written."""
        pool = self._start()
        rows = ((job.task, job.max_seq_length, i) for job in jobs for i in range(samples))
        window = _window(self.workers, max(job.max_seq_length for job in jobs))
        stream = _bounded_imap(pool, make_row_in_pool, rows, window)
        tick = self.progress.update if self.progress is not None else None
        for job in jobs:
            publish(*write_file(out, config, job, itertools.islice(stream, samples), tick))


def _window(workers: int, max_seq_length: int) -> int:
    """Samples in flight: enough that workers keep fitting while the writer compresses a
    row group, few enough that waiting rows (~8 bytes per token with their canonical
    encoding) stay under ~256 MB at any length."""
    return max(2 * workers, min(64, (256 << 20) // (8 * max_seq_length)))


def _bounded_imap(pool, fn, jobs: Iterable, window: int) -> Iterator:
    """`pool.imap(fn, jobs)` with at most `window` results in flight or waiting: at 1M tokens
    a row is megabytes, and workers must not run ahead of the writer without bound."""
    pending: collections.deque = collections.deque()
    jobs = iter(jobs)
    for job in itertools.islice(jobs, window):
        pending.append(pool.apply_async(fn, (job,)))
    while pending:
        result = pending.popleft().get()
        for job in itertools.islice(jobs, 1):
            pending.append(pool.apply_async(fn, (job,)))
        yield result
