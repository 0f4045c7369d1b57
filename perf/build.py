"""Benchmark `ruler build`: per task and length, samples/s, tokens/s, fill, seconds, bytes.

Prints figures; asserts nothing (speed targets belong here, not in unit tests).

    python -m perf.build --quick                      # 13 tasks x 4K,32K x 50 samples
    python -m perf.build --tokenizer llama-3.1 --lengths paper --samples 500 --tokenize-pass
    python -m perf.build --quick --upstream /path/to/RULER [--upstream-python PY]

`--upstream DIR` (a NVIDIA/RULER checkout, never part of this repository) times the same build
side by side with upstream's own generator, in one run: ours as `ruler build` in a fresh
process, then upstream's `prepare.py` per task and length, `--workers` at a time
(perf/ruler_upstream.py), upstream under `--upstream-python` (its own environment; its
imports are checked first). Both sides' wall and CPU seconds (their whole process trees,
start-up included), the load around each, and the wall and CPU ratios are printed
(perf/side_by_side.py).

`seconds` is the time spent on a file: by one worker, as workers write whole files (so the
per-file figures add up to the workers' CPU time, not to the wall time).
`--tokenize-pass` also times one batch tokenization of every output prompt (chat template
included) on all workers, and prints the builder/tokenization ratio (issue T2).
`--profile` builds in one process under cProfile and prints where the time goes.
`--executor ray` builds on Ray: the cluster at `--ray-address`, else a two-node cluster started
here for the run (perf.ray_cluster; the cores split between the nodes). Either executor
prints files/s, tokens/s, the per-task split of time and each worker's peak RSS.

    python -m perf.build --lengths long --samples 500                    # local, 2 cores
    python -m perf.build --lengths long --samples 500 --executor ray     # 2-node Ray
`--tokenizer FOLDER` (a tokenizer outside the registry) certifies every row by a whole-prompt
count; `--sampled-certification` shows what that costs.
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import os
import pstats
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from perf.ray_cluster import RayCluster
from perf.side_by_side import add_upstream_python, print_ratios, run_ours
from ruler.builder.pipeline import BuildConfig, run_build
from ruler.builder.pipeline.config import EXECUTORS, default_start_method
from ruler.builder.selection import parse_lengths, parse_tasks
from ruler.builder.tokenizer_registry import load_tokenizer


def _cpu_seconds() -> tuple[float, float]:
    """User + system CPU seconds of this process and of its finished children (the workers)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _peak_rss_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


_TOK = None  # the tokenizer of a tokenize-pass pool process, set by its initializer


def _init_counter(tok) -> None:
    global _TOK
    _TOK = tok


def _count_file(args: tuple[str, str]) -> int:
    path, mode = args
    total = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=64,
                                                   columns=["input", "answer_prefix"]):
        total += sum(len(_TOK.prompt_ids(i, p, mode)) for i, p in
                     zip(batch.column("input").to_pylist(),
                         batch.column("answer_prefix").to_pylist()))
    return total


def tokenize_pass(out: Path, tokenizer: str, mode: str, workers: int) -> tuple[float, int]:
    """Seconds to tokenize every stored prompt once (batch, all workers), and the token total."""
    tok = load_tokenizer(tokenizer)
    # Most tokens first (L x rows; bytes mislead: a noise haystack compresses to nothing), so
    # both workers stay busy to the end: a fair, not a padded, baseline.
    paths = sorted(out.glob("data/*/*/*.parquet"),
                   key=lambda p: -int(p.stem) * pq.ParquetFile(p).metadata.num_rows)
    files = [(str(p), mode) for p in paths]
    started = time.perf_counter()
    with multiprocessing.get_context(default_start_method()).Pool(
            workers, initializer=_init_counter, initargs=(tok,)) as pool:
        total = sum(pool.imap_unordered(_count_file, files))
    return time.perf_counter() - started, total


#: (label, how to find it in the profile): cumulative time of the matching functions.
PHASES = (
    ("load tokenizer", "tokenizer_registry.py", "load_tokenizer"),
    ("check inputs (preflight, corpora)", "builder/pipeline/plan.py", "preflight"),
    ("fit samples (total)", "builder/fitting.py", "fit_sample"),
    ("  draft text", "builder/tasks/", "draft"),
    ("  count pieces", "builder/counting.py", "piece_counts"),
    ("  count frames / whole prompts", "catalog/tokenizer.py", "prompt_length"),
    ("gold token positions", "builder/counting.py", "token_positions"),
    ("write Parquet", "builder/writer.py", "write"),
    ("close Parquet files", "builder/writer.py", "__exit__"),
)


def print_profile(stats: pstats.Stats, wall: float) -> None:
    """Cumulative seconds per phase (phases nest; a function counted once per phase)."""
    print("where the time goes (one process, cProfile overhead included):")
    for label, file_part, func in PHASES:
        seconds = sum(ct for (file, _, name), (_, _, _, ct, _) in stats.stats.items()
                      if file_part in file and name == func)
        print(f"  {label:36} {seconds:8.1f} s  {seconds / wall:6.1%}")
    tokenizing = sum(tt for (file, _, name), (_, _, tt, _, _) in stats.stats.items()
                     if "encode" in name and "builder" not in file)
    print(f"  {'tokenizer library calls (any phase)':36} {tokenizing:8.1f} s  "
          f"{tokenizing / wall:6.1%}")
    print("top functions by own time:")
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]
    for (file, line, name), (_, calls, tt, _, _) in top:
        where = f"{Path(file).name}:{line}" if file != "~" else ""
        print(f"  {tt:8.1f} s  {calls:>9}  {where} {name}"[:110])


def print_task_split(files) -> None:
    """Seconds per task (summed over its files and workers) and their share."""
    total = sum(f.seconds for f in files) or 1.0
    by_task: dict[str, list] = {}
    for f in files:
        by_task.setdefault(f.task, []).append(f)
    print("time per task (worker seconds, all lengths):")
    for task, fs in sorted(by_task.items(), key=lambda kv: -sum(f.seconds for f in kv[1])):
        seconds = sum(f.seconds for f in fs)
        print(f"  {task:18} {seconds:9.1f} s  {seconds / total:6.1%}  "
              + "  ".join(f"{f.max_seq_length}: {f.seconds:.1f} s" for f in
                          sorted(fs, key=lambda f: f.max_seq_length)))


def print_workers(files) -> None:
    """Each worker process (host:pid; Ray: node:pid): files, busy seconds, peak RSS."""
    by_worker: dict[str, list] = {}
    for f in files:
        by_worker.setdefault(f.worker or "?", []).append(f)
    print("per worker:")
    for worker, fs in sorted(by_worker.items()):
        print(f"  {worker:28} {len(fs):3} files  {sum(f.seconds for f in fs):9.1f} s busy  "
              f"peak RSS {max(f.peak_rss_mb for f in fs):7.0f} MB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokenizer", default="llama-3.1")
    p.add_argument("--tasks", default="all")
    p.add_argument("--lengths", default="4096,32768")
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--workers", type=int, default=multiprocessing.cpu_count())
    p.add_argument("--out", type=Path, default=None, help="build folder (default: a temp dir)")
    p.add_argument("--quick", action="store_true", help="13 tasks x 4K,32K x 50 samples")
    p.add_argument("--tokenize-pass", action="store_true",
                   help="also time one tokenization pass over the output (T2 ratio)")
    p.add_argument("--exact-counts", action="store_true",
                   help="count every probe by whole-prompt tokenization (the reference path)")
    p.add_argument("--sampled-certification", action="store_true",
                   help="tokenizers outside the registry: certify sampled rows only (the "
                        "default certifies every row; compare the two with --tokenizer FOLDER)")
    p.add_argument("--profile", action="store_true",
                   help="build in one process under cProfile and print where the time goes")
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--ray-address", default=None,
                   help="a running Ray cluster (default: start a two-node cluster here)")
    p.add_argument("--sources", default=None,
                   help="sources folder (e.g. one made by perf.hotpotqa_proxy)")
    p.add_argument("--upstream", type=Path, default=None,
                   help="a NVIDIA/RULER checkout: time upstream's generator beside ours")
    add_upstream_python(p)
    args = p.parse_args(argv)
    if args.quick:
        args.tasks, args.lengths, args.samples = "all", "4096,32768", 50
    if args.upstream is not None:
        return side_by_side(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="ruler-bench-"))
    cluster = None
    if args.executor == "ray" and args.ray_address is None:
        started = time.perf_counter()
        cluster = RayCluster(cpus_per_node=max(1, args.workers // 2)).start()
        os.environ.update({k: cluster.env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
        args.ray_address = cluster.address
        print(f"started a two-node Ray cluster ({cluster.cpus} CPU(s) each) in "
              f"{time.perf_counter() - started:.1f} s (not counted below)")
    cfg = BuildConfig(tokenizer=args.tokenizer, tasks=parse_tasks(args.tasks),
                      lengths=parse_lengths(args.lengths), samples=args.samples, out=out,
                      workers=1 if args.profile else args.workers, progress=False,
                      exact_counts=args.exact_counts,
                      sampled_certification=args.sampled_certification,
                      executor=args.executor, ray_address=args.ray_address,
                      sources_dir=args.sources)
    profiler = cProfile.Profile() if args.profile else None
    started, cpu_before, load_before = time.perf_counter(), _cpu_seconds(), os.getloadavg()[0]
    if profiler is not None:
        profiler.enable()
    try:
        report = run_build(cfg)
    finally:
        if cluster is not None:
            cluster.stop()
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - started

    print(f"{'task':18} {'L':>7} {'samples/s':>10} {'tokens/s':>11} {'fill mean':>9} "
          f"{'fill min':>8} {'probes/s':>8} {'seconds':>8} {'MB':>8}")
    tokens = 0
    for f in sorted(report.files, key=lambda f: (f.max_seq_length, f.task)):
        if f.skipped:
            print(f"{f.task:18} {f.max_seq_length:>7} (up to date, skipped)")
            continue
        n_tokens = f.fill_mean * f.max_seq_length * f.rows
        tokens += n_tokens
        print(f"{f.task:18} {f.max_seq_length:>7} {f.rows / f.seconds:>10.1f} "
              f"{n_tokens / f.seconds:>11.0f} {f.fill_mean:>9.4f} {f.fill_min:>8.4f} "
              f"{f.probes / f.rows:>8.1f} {f.seconds:>8.1f} {f.bytes / 1e6:>8.2f}")
    size = sum(f.bytes for f in report.files)
    built = [f for f in report.files if not f.skipped]
    own, children = _peak_rss_mb()
    print(f"total ({args.executor} executor): {len(report.files)} files, {tokens / 1e6:.1f} M "
          f"tokens, wall {wall:.1f} s, {len(built) / wall:.3f} files/s, {tokens / wall:.0f} "
          f"tokens/s end to end, {size / 1e6:.1f} MB on disk")
    print_task_split(built)
    print_workers(built)
    print(f"peak RSS: main {own:.0f} MB" + (f", largest local worker {children:.0f} MB"
                                            if args.executor == "local" else ""))
    cpu_main, cpu_workers = (b - a for a, b in zip(cpu_before, _cpu_seconds()))
    print(f"CPU: main {cpu_main:.1f} s (start-up, publishing files)" +
          (f", workers {cpu_workers:.1f} s (fitting samples, writing Parquet)"
           if args.executor == "local" else "") +
          f"; load {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    if profiler is not None:
        print_profile(pstats.Stats(profiler), wall)
    if args.tokenize_pass:
        mode = load_tokenizer(args.tokenizer).default_mode()
        seconds, counted = tokenize_pass(out, args.tokenizer, mode, args.workers)
        print(f"one tokenization pass over the output: {seconds:.1f} s ({counted / 1e6:.1f} M "
              f"tokens); builder/tokenization ratio {wall / seconds:.2f} (target <= 0.5)")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)
    return 0


def side_by_side(args: argparse.Namespace) -> int:
    """Ours (`ruler build` in a fresh process), then upstream's prepare.py, on the same tasks,
    lengths, samples and cores; per file seconds, both sides' wall and CPU seconds, ratios."""
    from perf.ruler_upstream import prepare_upstream, run_upstream

    tasks = parse_tasks(args.tasks)
    lengths = parse_lengths(args.lengths)
    argv = ["--tokenizer", args.tokenizer, "--tasks", ",".join(tasks), "--lengths",
            ",".join(map(str, lengths)), "--samples", str(args.samples), "--workers",
            str(args.workers)] + (["--sources", args.sources] if args.sources else [])
    work = args.out or Path(tempfile.mkdtemp(prefix="ruler-bench-"))
    try:
        upstream_dir = args.upstream.resolve()
        env = prepare_upstream(upstream_dir, args.upstream_python, work, args.sources)
        ours = run_ours(argv, work / "ours")
        tok_folder = Path(os.environ.get("RULER_TOKENIZERS", "")) / args.tokenizer
        upstream = run_upstream(upstream_dir, args.upstream_python, env, tok_folder, tasks,
                                lengths, args.samples, args.workers, work)
        print(f"{len(tasks)} tasks x {len(lengths)} length(s) x {args.samples} samples, "
              f"{args.workers} worker(s) a side\n")
        print("| task | L | upstream s (process) | ours s (file) |\n|---|---|---|---|")
        by_file = {(t, L): s for (_, t, L), s in ours.files.items()}
        for L in lengths:
            for t in tasks:
                print(f"| {t} | {L} | {upstream.files[(t, L)]:.1f} | "
                      f"{by_file.get((t, L), float('nan')):.2f} |")
        print()
        print_ratios(ours, upstream)
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
