"""`ruler build`: plan the split files, fit every sample, stream rows to Parquet.

The plan is (task, length) files for one tokenizer; `--shard i/n` keeps every n-th file, so
shards are disjoint and their union is the full build. Before anything is written, every
input is validated (tasks, lengths, tokenizer, sources, sample counts, and that the smallest
sample of each task fits each length), so bad input leaves OUT untouched. Files are written
atomically and recorded in the manifest one by one: an interrupted build resumes, and a file
whose build key (seed, tokenizer, sources, generator version, sample count) is unchanged is
kept, never rebuilt, while a changed key never reuses it. Workers fit and write whole files,
longest first; the parent process publishes each finished file and records it.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from builder import __version__
from builder.context import BuildContext
from builder.counting import ExactCounter, PieceCounter
from builder.errors import RulerError, TooShortError
from builder.fitting import fit_sample
from builder.manifest import canonical_row_bytes, data_path, read_manifest, write_manifest
from builder.rng import sample_rng
from builder.sources import file_sha256
from builder.tasks import TASKS, TaskGenerator, get_task, make_generator
from builder.tokenizer import Tokenizer
from builder.tokenizer_registry import config_name, load_tokenizer
from builder.writer import SplitWriter, temp_prefix


@dataclass(frozen=True)
class BuildConfig:
    """What to build. Mirrors the `ruler build` flags one to one."""

    tokenizer: str
    tasks: tuple[str, ...] = tuple(TASKS)
    lengths: tuple[int, ...] = (4096,)
    samples: int = 500
    seed: int = 42
    out: Path = Path("ruler")
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    shard: tuple[int, int] = (0, 1)
    sources_dir: str | None = None
    tokenizers_dir: str | None = None
    progress: bool = True
    exact_counts: bool = False  # tokenize every probe whole (the reference; slow)

    def __post_init__(self) -> None:
        for t in self.tasks:
            get_task(t)
        if not self.tasks:
            raise RulerError("no tasks selected")
        if len(set(self.tasks)) != len(self.tasks) or len(set(self.lengths)) != len(self.lengths):
            raise RulerError("tasks and lengths must not repeat")
        if not self.lengths or any(not isinstance(L, int) or L <= 0 for L in self.lengths):
            raise RulerError(f"lengths must be positive integers, got {self.lengths}")
        if self.samples < 1:
            raise RulerError(f"--samples must be >= 1, got {self.samples}")
        i, n = self.shard
        if n < 1 or not 0 <= i < n:
            raise RulerError(f"--shard must be i/n with 0 <= i < n, got {i}/{n}")
        if self.workers < 1:
            raise RulerError(f"--workers must be >= 1, got {self.workers}")


@dataclass
class FileResult:
    path: str
    task: str
    max_seq_length: int
    rows: int
    skipped: bool
    seconds: float = 0.0
    fill_mean: float = 0.0
    fill_min: float = 0.0
    probes: int = 0
    bytes: int = 0
    exact_rows: int = 0  # rows counted by whole-prompt tokenization (piece counts not proven)


@dataclass
class BuildReport:
    out: Path
    config: str
    files: list[FileResult]


# --- worker side ----------------------------------------------------------------------------

# Set in the parent before the pool forks, so workers share the loaded tokenizer and corpora.
_STATE: dict[str, Any] = {}


def _generator(task: str, L: int) -> TaskGenerator:
    cache = _STATE.setdefault("generators", {})
    if (task, L) not in cache:
        cache[(task, L)] = make_generator(get_task(task), _STATE["ctx"], L)
    return cache[(task, L)]


#: Besides each worker's first sample of a task, every n-th sample of a file (sample 0 included)
#: is also counted whole: at 128K a whole-prompt count takes about a second.
SPOT_CHECK_EVERY = 500


def _fit(gen: TaskGenerator, index: int, counter: ExactCounter):
    ctx: BuildContext = _STATE["ctx"]
    task, L = gen.spec.name, gen.max_seq_length
    fitted = fit_sample(gen, index, lambda: sample_rng(ctx.seed, ctx.tokenizer_name, task, L, index),
                        counter.prompt_length, L)
    d = fitted.draft
    return fitted, counter.token_positions(d, [a for a, _ in d.gold_spans] + list(d.context_span))


def _certified_fit(gen: TaskGenerator, index: int):
    """Fit with piece counts, checked against whole-prompt tokenization where it matters.

    A worker's first sample of each task is checked (files are built shortest first, so this
    is cheap): whether a tokenizer is additive at the piece junctions depends on the junctions
    a task makes, not on the length. If it is not, that worker counts the task exactly from
    then on. Spot checks then cover every file; one that disagrees means earlier rows may be
    wrong, which is an error, never a silent fix.
    """
    exact: ExactCounter = _STATE["exact"]
    fast: ExactCounter = _STATE["fast"]
    task = gen.spec.name
    fast.scope(task)
    verdicts: dict = _STATE.setdefault("certified", {})
    if verdicts.get(task) is False:
        return _fit(gen, index, exact), True
    fitted, marks = _fit(gen, index, fast)
    first = task not in verdicts
    if first or index % SPOT_CHECK_EVERY == 0:
        d = fitted.draft
        agrees = (exact.prompt_length(d) + gen.spec.tokens_to_generate == fitted.length
                  and exact.token_positions(d, [a for a, _ in d.gold_spans]
                                            + list(d.context_span)) == marks)
        if not agrees and not first:
            raise RulerError(
                f"task {task}, L={gen.max_seq_length}, sample {index}: piece token counts "
                f"disagree with whole-prompt tokenization for tokenizer "
                f"{_STATE['ctx'].tokenizer_name!r}; rebuild this file with --exact-counts")
        verdicts[task] = agrees
        if not agrees:
            return _fit(gen, index, exact), True
    return (fitted, marks), False


def make_row(job: tuple[str, int, int]) -> tuple[dict[str, Any], bytes, int, bool]:
    """Fit sample `index` of (task, L): its row, the row's canonical bytes (for the content
    hash), the probes spent, and whether it was counted exactly."""
    task, L, index = job
    ctx: BuildContext = _STATE["ctx"]
    gen = _generator(task, L)
    if _STATE["fast"] is _STATE["exact"]:
        (fitted, marks), counted_exactly = _fit(gen, index, _STATE["exact"]), True
    else:
        (fitted, marks), counted_exactly = _certified_fit(gen, index)
    d = fitted.draft
    gold, (c0, c1) = marks[:-2], marks[-2:]
    spec = gen.spec
    row = {
        "tokenizer": ctx.tokenizer_name, "task": task, "max_seq_length": L, "index": index,
        "input": d.input, "answer_prefix": d.answer_prefix, "outputs": list(d.outputs),
        "length": fitted.length, "tokens_to_generate": spec.tokens_to_generate,
        "metric": spec.metric, "gold_token_positions": gold,
        "gold_depths": [(p - c0) / max(1, c1 - c0) for p in gold], "haystack_size": d.size,
    }
    return row, canonical_row_bytes(row), fitted.probes, counted_exactly


# --- planning -------------------------------------------------------------------------------

def build_identity(cfg: BuildConfig, tok: Tokenizer, mode: str, sources: dict) -> dict[str, Any]:
    """Everything that, when changed, makes existing files of this config stale."""
    return {"generator_version": __version__, "seed": cfg.seed,
            "tokenizer": tok.identity.fingerprint(), "prompt_mode": mode,
            "samples": cfg.samples,
            "sources": {k: v.sha256 for k, v in sorted(sources.items())}}


def file_key(identity: dict[str, Any], task: str, L: int, task_sources: Sequence[str]) -> str:
    relevant = dict(identity, sources={k: identity["sources"][k] for k in task_sources},
                    task=task, max_seq_length=L)
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def plan_units(cfg: BuildConfig) -> list[tuple[str, int]]:
    units = [(t, L) for L in sorted(cfg.lengths) for t in cfg.tasks]
    i, n = cfg.shard
    return [u for k, u in enumerate(units) if k % n == i]


def _resolve_sources(ctx: BuildContext, units) -> None:
    for task in sorted({t for t, _ in units}):
        for source_id in get_task(task).sources:
            ctx.source(source_id)


def _preflight(ctx: BuildContext, units, cfg: BuildConfig, mode: str) -> None:
    """Fail before writing anything: sample counts and the smallest samples' fit.

    The smallest draft of sample 0 is checked always; when it takes more than half of L (a
    length near a task's minimum, where samples differ in whether they fit), every sample's
    smallest draft is checked, so a too-short length never fails in the middle of a build.
    """
    count = _STATE["exact"].prompt_length  # small drafts: whole-prompt counts are cheap
    for task, L in units:
        gen = _generator(task, L)
        gen.check_samples(cfg.samples)

        def needed(index: int) -> int:
            rng = sample_rng(ctx.seed, ctx.tokenizer_name, task, L, index)
            return count(gen.draft(index, rng, gen.min_size)) + gen.spec.tokens_to_generate

        worst = needed(0)
        if L >= worst > L // 2:
            worst = max(worst, *(needed(i) for i in range(1, cfg.samples)))
        if worst > L:
            raise TooShortError(task, L, worst)


def _build_entry(tok: Tokenizer, mode: str, ctx: BuildContext, cfg: BuildConfig, identity,
                 previous: dict | None, config: str, manifest: dict) -> dict[str, Any]:
    sources = {k: v.as_manifest() for k, v in sorted(ctx.used_sources().items())}
    if previous:  # same identity (else dropped): keep the sources of files built earlier
        sources = {**previous.get("sources", {}), **sources}
    files = [f for f in manifest["files"].values() if f["config"] == config]
    return {
        "tokenizer": tok.identity.as_manifest(), "prompt_mode": mode, "seed": cfg.seed,
        "samples": cfg.samples, "sources": sources, "identity": identity,
        "official": tok.identity.pinned and all(s["official"] for s in sources.values()),
        "tasks": [t for t in TASKS if any(f["task"] == t for f in files)],
        "lengths": sorted({f["max_seq_length"] for f in files}),
    }


def run_build(cfg: BuildConfig) -> BuildReport:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # we parallelise by process
    tok = load_tokenizer(cfg.tokenizer, cfg.tokenizers_dir)
    config = config_name(tok.name)
    mode = tok.default_mode()
    ctx = BuildContext(tok, config, cfg.seed, cfg.sources_dir)
    _STATE.clear()
    exact = ExactCounter(tok, mode)
    _STATE.update(ctx=ctx, mode=mode, exact=exact,
                  fast=exact if cfg.exact_counts else PieceCounter(tok, mode))
    units = plan_units(cfg)
    _resolve_sources(ctx, units)

    out = Path(cfg.out)
    manifest = read_manifest(out)
    identity = build_identity(cfg, tok, mode, ctx.used_sources())
    previous = manifest["builds"].get(config)
    # Source hashes are compared per file (build_key): a run may use fewer sources.
    changed = bool(previous) and (previous.get("identity", {}) | {"sources": {}}
                                  != identity | {"sources": {}})
    results: list[FileResult] = []
    todo = []
    for task, L in units:
        rel = data_path(config, task, L)
        key = file_key(identity, task, L, get_task(task).sources)
        entry = None if changed else manifest["files"].get(rel)
        if entry and entry.get("build_key") == key and (out / rel).is_file() \
                and file_sha256(out / rel) == entry["sha256"]:
            results.append(FileResult(rel, task, L, entry["rows"], skipped=True,
                                      bytes=entry["bytes"]))
        else:
            todo.append((task, L, rel, key))
    _preflight(ctx, [(t, L) for t, L, _, _ in todo], cfg, mode)
    if changed:  # only after every check passed: a folder holds one build identity per config
        _drop_config(out, manifest, config)
        previous = None
    bar = _progress(cfg, len(todo) * cfg.samples)
    if bar is not None and cfg.workers > 1:  # before the fork: workers report progress here
        _STATE["ticks"] = multiprocessing.get_context("fork").SimpleQueue()
    pool = _make_pool(cfg.workers) if todo and cfg.workers > 1 else None

    def record(result: FileResult, entry: dict, written: Path) -> None:
        os.replace(written, out / result.path)  # published here only, then recorded
        results.append(result)
        manifest["files"][result.path] = entry
        manifest["files"] = dict(sorted(manifest["files"].items()))
        manifest["builds"][config] = _build_entry(tok, mode, ctx, cfg, identity, previous,
                                                  config, manifest)
        _commit(out, manifest)

    try:
        if pool is not None and len(todo) >= cfg.workers:
            _build_files_in_workers(pool, out, config, todo, cfg.samples, bar, record)
        else:
            _build_files_here(pool, out, config, todo, cfg.samples, bar, record, cfg.workers)
        if bar is not None:
            bar.close()
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        for _, _, rel, _ in todo:  # what a stopped worker or a failure left unpublished
            for tmp in (out / rel).parent.glob(temp_prefix(out / rel) + "*.tmp"):
                tmp.unlink(missing_ok=True)
    results.sort(key=lambda r: units.index((r.task, r.max_seq_length)))
    manifest["builds"][config] = _build_entry(tok, mode, ctx, cfg, identity, previous, config,
                                              manifest)
    _commit(out, manifest)
    return BuildReport(out, config, results)


def _commit(out: Path, manifest: dict) -> None:
    """Record finished files: manifest first, then the card that is rendered from it."""
    from cards.render import write_card

    write_manifest(out, manifest)
    write_card(out)


# --- writing files --------------------------------------------------------------------------

def _build_files_in_workers(pool, out: Path, config: str, todo, samples: int, bar, record):
    """Each worker fits and writes whole files, longest first: no rows cross processes,
    each worker's piece cache serves every sample of its file, and the last files to
    finish are the short ones, so both workers stay busy to the end."""
    ticks = _STATE["ticks"] if bar is not None else None
    jobs = sorted(todo, key=lambda job: -job[1])
    pending = [pool.apply_async(build_file, ((out, config, *job, samples),)) for job in jobs]
    while pending:
        for done in [r for r in pending if r.ready()]:
            pending.remove(done)
            record(*done.get())  # re-raises a worker's error
        while ticks is not None and not ticks.empty():
            bar.update(ticks.get())
        if pending:
            pending[0].wait(0.2)


def _build_files_here(pool, out: Path, config: str, todo, samples: int, bar, record,
                      workers: int):
    """Files one after another, written here. With a pool (fewer files than workers), the
    workers fit the samples of one stream across all files, so they start the next file
    while the last rows of the current one are still being fitted and written."""
    jobs = ((task, L, i) for task, L, _, _ in todo for i in range(samples))
    stream = (_bounded_imap(pool, make_row, jobs, _window(workers, max(L for _, L, _, _ in todo)))
              if pool is not None else map(make_row, jobs))
    tick = bar.update if bar is not None else None
    for task, L, rel, key in todo:
        record(*_write_file(out, config, rel, task, L, key,
                            itertools.islice(stream, samples), tick))


def build_file(job: tuple) -> tuple[FileResult, dict[str, Any], Path]:
    """In a worker: fit and write every sample of one (task, L) file."""
    out, config, task, L, rel, key, samples = job
    ticks = _STATE.get("ticks")
    pending, last = 0, time.monotonic()

    def tick(n: int) -> None:  # progress for the parent's bar, sent at most twice a second
        nonlocal pending, last
        pending += n
        if ticks is not None and time.monotonic() - last > 0.5:
            ticks.put(pending)
            pending, last = 0, time.monotonic()

    rows = (make_row((task, L, i)) for i in range(samples))
    done = _write_file(out, config, rel, task, L, key, rows, tick)
    if ticks is not None and pending:
        ticks.put(pending)
    return done


def _write_file(out: Path, config: str, rel: str, task: str, L: int, key: str, rows,
                tick) -> tuple[FileResult, dict[str, Any], Path]:
    """Write one file's rows to a temporary file beside it; its result, manifest entry and
    the temporary path (the caller publishes it)."""
    started = time.perf_counter()
    fills, probes, exact_rows = [], 0, 0
    with SplitWriter(out / rel, L, publish=False) as writer:
        for row, canonical, spent, counted_exactly in rows:
            writer.write(row, canonical)
            fills.append(row["length"] / L)
            probes += spent
            exact_rows += counted_exactly
            if tick is not None:
                tick(1)
    path = writer.temp_path
    entry = {"config": config, "task": task, "max_seq_length": L, "rows": writer.rows,
             "bytes": path.stat().st_size, "sha256": file_sha256(path),
             "content_sha256": writer.content_sha256, "build_key": key}
    result = FileResult(rel, task, L, writer.rows, skipped=False,
                        seconds=time.perf_counter() - started,
                        fill_mean=sum(fills) / len(fills), fill_min=min(fills), probes=probes,
                        bytes=entry["bytes"], exact_rows=exact_rows)
    return result, entry, path


def _window(workers: int, max_seq_length: int) -> int:
    """Samples in flight: enough that workers keep fitting while the writer compresses a
    row group, few enough that waiting rows (~8 bytes per token with their canonical
    encoding) stay under ~256 MB at any length."""
    return max(2 * workers, min(64, (256 << 20) // (8 * max_seq_length)))


def _bounded_imap(pool, fn, jobs, window: int):
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


def _drop_config(out: Path, manifest: dict, config: str) -> None:
    stale = [rel for rel, f in manifest["files"].items() if f["config"] == config]
    if stale:
        print(f"ruler: removing {len(stale)} file(s) of {config!r} built with a different seed, "
              f"tokenizer, sample count or sources")
    for rel in stale:
        (out / rel).unlink(missing_ok=True)
        del manifest["files"][rel]
    manifest["builds"].pop(config, None)
    shutil.rmtree(out / "data" / config, ignore_errors=True)


def _make_pool(workers: int):
    # fork: workers inherit the loaded tokenizer, word lists and essay corpus from _STATE.
    return multiprocessing.get_context("fork").Pool(workers)


def _progress(cfg: BuildConfig, total: int):
    if not cfg.progress or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="sample", desc="ruler build", dynamic_ncols=True)
