"""The work itself: fit samples to their length, certify the counts, write whole files.

A `Worker` is made from a build recipe and holds everything fitting needs (the build context,
the counters with their piece caches, one generator per task and length) and nothing about
where it runs: the build runs one in its own process when it has one worker, and the local
executor gives one to each pool process through the pool initializer (inherited by `fork`, or
rebuilt from its recipe under `spawn`: see `__reduce__`).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generator, Iterable

from ruler.builder.counting import ExactCounter, PieceCounter, counting_method
from ruler.builder.fitting import FittedSample, fit_sample
from ruler.builder.manifest import FileEntry, canonical_row_bytes
from ruler.builder.pipeline.config import FileJob, FileResult
from ruler.builder.pipeline.recipe import BuildRecipe
from ruler.builder.row_checks import RowRules, row_findings
from ruler.builder.writer import SplitWriter
from ruler.catalog import TaskGenerator, get_task, make_generator
from ruler.catalog.context import BuildContext
from ruler.catalog.family import get_family
from ruler.kernel.errors import RulerError
from ruler.kernel.hashing import file_sha256
from ruler.kernel.lifeline import die_with_parent
from ruler.kernel.rng import sample_rng

#: Besides each worker's first sample of a task, every n-th sample of a file (sample 0 included)
#: is also counted whole: at 128K a whole-prompt count takes about a second.
SPOT_CHECK_EVERY = 500


@dataclass(frozen=True)
class Row:
    """A fitted row and what making it cost and proved."""

    row: dict[str, Any]
    canonical: bytes  # the row's canonical encoding (for the content hash)
    probes: int  # length probes spent fitting it
    counted_exactly: bool  # counted by whole-prompt tokenization
    certified: bool  # its piece count was checked against a whole-prompt count
    # The share of its context that repeats source material (a source used up before L:
    # catalog.base.Draft).
    repeated_share: float
    # How its `length` counts (catalog.length_rules): recorded in the file's manifest entry
    length_rule: str | None = None
    # Shorter than its benchmark's fill promise, kept: it holds all of its task's inputs.
    short_at_bound: bool = False


class Worker:
    """Fits samples of one build, as its recipe says (tokenizer, seeds, prompt mode, variant,
    dataset config).

    With `recipe.certify_every_row` every row's piece count is checked against a whole-prompt
    count (for tokenizers whose additivity no test has proven); else the first sample of each
    task and every SPOT_CHECK_EVERY-th are checked. `temp_tag` marks this build's temporary
    files, so a build cleans up its own and never another's writing the same file at the
    same time. `ctx`: the build context to use (default: a fresh one from the recipe); the
    build resolves its sources in it before the worker is sent to other processes.
    """

    def __init__(self, recipe: BuildRecipe, temp_tag: str = "", ctx: BuildContext | None = None):
        self.recipe, self.temp_tag = recipe, temp_tag
        recipe.declare_tasks()
        self.ctx = ctx if ctx is not None else recipe.context()
        tok, mode = recipe.tokenizer, recipe.prompt_mode
        self.exact = ExactCounter(tok, mode)
        self.fast = self.exact if recipe.exact_counts else PieceCounter(tok, mode)
        self._generators: dict[tuple[str, int], TaskGenerator] = {}
        self._rules: dict[tuple[str, int], RowRules] = {}
        # task -> whether piece counts agreed with whole-prompt counts on its first sample
        self._certified: dict[str, bool] = {}

    def __reduce__(self):
        # Sent to a spawned process or a Ray worker: the recipe (its tokenizer as a load
        # recipe, its variant by class) and the context with the sources the build resolved
        # (resources dropped), not the caches, which the new process fills again.
        return Worker, (self.recipe, self.temp_tag, self.ctx)

    def generator(self, task: str, L: int) -> TaskGenerator:
        key = (task, L)
        if key not in self._generators:
            self._generators[key] = make_generator(get_task(task), self.ctx, L)
        return self._generators[key]

    def _fit(self, gen: TaskGenerator, index: int,
             counter: ExactCounter) -> tuple[FittedSample, list[int]]:
        ctx, task, L = self.ctx, gen.spec.name, gen.max_seq_length
        fitted = fit_sample(gen, index,
                            lambda: sample_rng(ctx.seed, ctx.tokenizer_name, task, L, index),
                            counter.prompt_length, L,
                            getattr(counter, "tally_length", None))  # PieceCounter's
        d = fitted.draft
        return fitted, counter.token_positions(d, [a for a, _ in d.gold_spans]
                                               + list(d.context_span))

    def _certified_fit(self, gen: TaskGenerator, index: int):
        """Fit with piece counts, checked against whole-prompt tokenization where it matters.

        A worker's first sample of each task is checked (files are built shortest first, so
        this is cheap): whether a tokenizer is additive at the piece junctions depends on the
        junctions a task makes, not on the length. If it is not, this worker counts the task
        exactly from then on. Spot checks then cover every file; one that disagrees means
        earlier rows may be wrong, which is an error, never a silent fix. With
        `certify_every_row` every row is checked, so a disagreement anywhere only switches
        the rest of the task to exact counting: every earlier row was proven on its own.

        Returns ((fitted, marks), counted exactly, certified).
        """
        task = gen.spec.name
        self.fast.scope(gen.count_scope)
        if self._certified.get(task) is False:
            return self._fit(gen, index, self.exact), True, False
        fitted, marks = self._fit(gen, index, self.fast)
        first = task not in self._certified
        if first or self.recipe.certify_every_row or index % SPOT_CHECK_EVERY == 0:
            d = fitted.draft
            # A draft the piece counter counted whole (too few pieces: a text with no clean
            # junction to cut at) was counted as the check counts it: tokenizing it again
            # proves nothing.
            agrees = self.fast.counts_whole(d) or (
                self.exact.prompt_length(d) + gen.reserved_tokens == fitted.length
                and self.exact.token_positions(d, [a for a, _ in d.gold_spans]
                                               + list(d.context_span)) == marks)
            if not agrees and not first and not self.recipe.certify_every_row:
                raise RulerError(
                    f"task {task}, L={gen.max_seq_length}, sample {index}: piece token counts "
                    f"disagree with whole-prompt tokenization for tokenizer "
                    f"{self.ctx.tokenizer_name!r}; rebuild this file with --exact-counts")
            self._certified[task] = agrees
            if not agrees:
                return self._fit(gen, index, self.exact), True, False
            return (fitted, marks), False, True
        return (fitted, marks), False, False

    def _count_prompt(self, input_text: str, answer_prefix: str) -> int:
        """Whole-prompt tokens in the build's prompt mode (a variant's changed row)."""
        return self.recipe.tokenizer.prompt_length(input_text, answer_prefix,
                                                   self.recipe.prompt_mode)

    def make_row(self, task: str, L: int, index: int) -> Row:
        """Fit sample `index` of (task, L) and make its row."""
        gen = self.generator(task, L)
        if self.recipe.exact_counts:
            (fitted, marks), counted_exactly, certified = \
                self._fit(gen, index, self.exact), True, False
        else:
            (fitted, marks), counted_exactly, certified = self._certified_fit(gen, index)
        d = fitted.draft
        gold, (c0, c1) = marks[:-2], marks[-2:]
        spec = gen.spec
        context, question = get_family(spec.family.name).split_prompt(d.input, d.context_span)
        row = {
            "tokenizer": self.recipe.config, "task": task, "max_seq_length": L, "index": index,
            "input": d.input, "context": context, "question": question,
            "answer_prefix": d.answer_prefix,
            "outputs": list(d.outputs), "length": fitted.length,
            "tokens_to_generate": gen.tokens_to_generate, "metric": spec.metric,
            "gold_token_positions": gold,
            "gold_depths": [(p - c0) / max(1, c1 - c0) for p in gold], "haystack_size": d.size,
        }
        variant = self.recipe.variant
        row = variant.final_row(row, d.context_span, self._count_prompt)
        # The checks `ruler verify` makes of every row, on the row as written (among them the
        # variant's own rule: a depth sweep aims by the units' token counts, the row records
        # in-context positions): a row that fails one must never be written.
        if (task, L) not in self._rules:
            self._rules[task, L] = RowRules.of(self.recipe.config, task, L, variant,
                                               self.recipe.benchmark)
        family = get_family(spec.family.name)
        verdict = row_findings(self._rules[task, L], index, row,
                               lambda r: family.check_made_row(r, gen),
                               lambda r: gen.max_size is not None and d.size == gen.max_size)
        if verdict.findings:
            raise RulerError(f"task {task}, L={L}, sample {index}: " + "; ".join(
                f.message + (f"; {f.advice}" if f.advice else "") for f in verdict.findings))
        return Row(row, canonical_row_bytes(row), fitted.probes, counted_exactly, certified,
                   d.repeated_chars / max(1, d.context_span[1] - d.context_span[0]),
                   gen.ctx.length_rule, verdict.short_at_bound)

    def build_file(self, job: FileJob, tick: Callable[[int], None] | None = None
                   ) -> tuple[FileResult, FileEntry, Path]:
        """Fit and write every sample of one file (see `write_file`)."""
        rows = (self.make_row(job.task, job.max_seq_length, i) for i in range(job.samples))
        return write_file(job, rows, tick, self.temp_tag)


def write_file(job: FileJob, rows: Iterable[Row], tick: Callable[[int], None] | None = None,
               temp_tag: str = "") -> tuple[FileResult, FileEntry, Path]:
    """Write one file's rows to a temporary file beside its final path (in `job.out`).
    Returns its result, its manifest entry and the temporary path: the caller alone
    publishes files."""
    steps = write_file_steps(job, rows, temp_tag)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if tick is not None:
            tick(1)


def write_file_steps(job: FileJob, rows: Iterable[Row], temp_tag: str = ""
                     ) -> Generator[None, None, tuple[FileResult, FileEntry, Path]]:
    """`write_file` one row at a time: yields after each row is written and returns what
    `write_file` returns, so a caller that must yield itself (a Ray actor streaming progress
    to its driver) interleaves its own steps. Closed early, it removes the temporary file."""
    started = time.perf_counter()
    L = job.max_seq_length
    fills, probes, exact_rows, certified_rows, repeated, short = [], 0, 0, 0, [], 0
    rules: set[str | None] = set()
    with SplitWriter(job.out / job.path, L, publish=False, temp_tag=temp_tag) as writer:
        for made in rows:
            writer.write(made.row, made.canonical)
            fills.append(made.row["length"] / L)
            probes += made.probes
            exact_rows += made.counted_exactly
            certified_rows += made.certified
            repeated.append(made.repeated_share)
            rules.add(made.length_rule)
            short += made.short_at_bound
            yield
    path = writer.temp_path
    # The file's manifest entry, whole: made here only, recorded as it is by the publisher.
    entry = FileEntry(
        config=job.config, task=job.task, max_seq_length=L, rows=writer.rows,
        bytes=path.stat().st_size, sha256=file_sha256(path),
        content_sha256=writer.content_sha256, build_key=job.build_key,
        packages=dict(job.packages),
        counting=counting_method(writer.rows, exact_rows, certified_rows, job.tokenizer_pinned),
        # one task's rows: one rule (None: rows made without one, e.g. by a test)
        length_rule=rules.pop() if len(rules) == 1 else None,
        # only where a source ran out
        repeated_share={"mean": round(sum(repeated) / len(repeated), 4),
                        "max": round(max(repeated), 4)} if max(repeated) > 0 else None)
    result = FileResult(job.path, job.task, L, writer.rows, skipped=False,
                        seconds=time.perf_counter() - started,
                        fill_mean=sum(fills) / len(fills), fill_min=min(fills), probes=probes,
                        bytes=entry.bytes, exact_rows=exact_rows,
                        certified_rows=certified_rows, worker=worker_name(),
                        peak_rss_mb=peak_rss_mb(), short_at_bound=short)
    return result, entry, path


def worker_name() -> str:
    """host:pid of this process (which worker built a file, for reports)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports KiB, macOS bytes)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


# --- inside a pool process ----------------------------------------------------------------------
# The initializer gives each pool process its Worker; these module globals exist only in pool
# processes (the parent never sets them), so builds in one process never share state.

_worker: Worker | None = None
_events: Any = None  # a multiprocessing queue to the parent: progress and file start/end


def init_pool_process(worker: Worker, events: Any, driver: int | None = None) -> None:
    """`driver`: the build's process, which this one must not outlive (`die_with_parent`)."""
    global _worker, _events
    # Ctrl-C reaches the whole process group: the parent stops the build and its workers,
    # which must not print tracebacks of their own. SIGTERM ends a worker at once, as the
    # parent's `_stop` expects (a forked worker inherits the parent's handler, which would
    # turn it into an exception inside the job).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if driver is not None:
        die_with_parent(driver)
    _worker, _events = worker, events


def build_file_in_pool(file_job: FileJob) -> tuple[FileResult, FileEntry, Path]:
    """Build one file in a pool process. The parent learns which file each process works on
    (`("start"|"end", pid, path)`), to name it if the process dies, and gets progress ticks
    (`("tick", n)`) at most twice a second."""
    pending, last = 0, time.monotonic()

    def tick(n: int) -> None:
        nonlocal pending, last
        pending += n
        if time.monotonic() - last > 0.5:
            _events.put(("tick", pending))
            pending, last = 0, time.monotonic()

    assert _worker is not None, "set by the pool process's initializer"
    _events.put(("start", os.getpid(), file_job.path))
    try:
        done = _worker.build_file(file_job, tick)
    finally:
        _events.put(("end", os.getpid(), file_job.path))
    if pending:
        _events.put(("tick", pending))
    return done


def make_row_in_pool(task: str, L: int, index: int) -> Row:
    assert _worker is not None, "set by the pool process's initializer"
    return _worker.make_row(task, L, index)
