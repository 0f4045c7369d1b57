"""`ruler build`."""

from __future__ import annotations

import argparse
import multiprocessing
from pathlib import Path
from typing import TYPE_CHECKING

from ruler.builder.errors import RulerError
from ruler.builder.pipeline.config import DEFAULT_OUT, EXECUTORS, MAX_SAMPLES, default_start_method
from ruler.builder.sources import SOURCES_ENV
from ruler.builder.tasks.benchmarks import ALIASES, BENCHMARK_SPECS, RULER, RULER2, benchmark_id
from ruler.builder.tasks.catalog import (
    LENGTH_SETS,
    RULER2_TASKS,
    RULER2_TOKENS_TO_GENERATE,
    STANDARD_TASKS,
    TASKS,
)
from ruler.builder.tokenizer_registry import TOKENIZERS_ENV, registry
from ruler.builder.variants import variant_kinds, variants_from_args

if TYPE_CHECKING:
    from ruler.builder.pipeline import BuildConfig


#: What the build summary's "fill" is (the worker's `fill_mean`/`fill_min`).
FILL_DEFINITION = ("fill: a row's length / L, the share of the length L it uses, where length = "
                   "its prompt's tokens + tokens_to_generate <= L; mean and smallest over the "
                   "file's rows")


def parse_lengths(text: str) -> tuple[int, ...]:
    """`4096,8192` or `4k,128k,1m` (k = 1024, m = 1024^2), and the named sets `paper`
    (4K..128K) and `long` (256K, 512K, 1M), alone or combined: `paper,long`."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in LENGTH_SETS:
            out += [L for L in LENGTH_SETS[part] if L not in out]
            continue
        scale = {"k": 1024, "m": 1024 * 1024}.get(part[-1:], 1)
        try:
            out.append(int(part[:-1] if scale > 1 else part) * scale)
        except ValueError:
            raise RulerError(f"bad length {part!r} in --lengths {text!r}: use integers like "
                             f"4096,8192 or 4k,1m, or {' / '.join(LENGTH_SETS)}") from None
    return tuple(out)


def parse_tasks(text: str | None) -> tuple[str, ...]:
    if not text or text == "all":
        return STANDARD_TASKS
    tasks = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise RulerError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    return tasks


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise RulerError(f"--shard takes i/n, counting from 0 (0/4 .. 3/4), got {text!r}") from None
    return i, n


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build", help="generate RULER splits for one tokenizer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate the RULER tasks for one tokenizer into OUT/data/<tokenizer>/<task>/"
                    "<L>.parquet,\nwith OUT/manifest.json and a dataset card (OUT/README.md). "
                    "Every sample fits its\nlength L exactly (prompt with chat template + answer "
                    "prefix + tokens_to_generate <= L).\nRe-running skips files that are "
                    "complete and match; an interrupted build resumes; builds of other\n"
                    "tasks, lengths or shards of the same build may run into one OUT at once. "
                    "A build whose seed,\nsamples, tokenizer or package versions differ from "
                    "the files in OUT refuses (--overwrite).",
        epilog=f"Registry tokenizers: {', '.join(registry())}.\n"
               f"Offline: ${TOKENIZERS_ENV} points at tokenizer folders, ${SOURCES_ENV} (or "
               f"--sources) at the\nessay/SQuAD/HotpotQA/punkt_tab inputs (`ruler sources list`).",
    )
    p.add_argument("--tokenizer", required=True,
                   help="registry name, a local tokenizer folder, or a Hub id org/name@revision")
    shown = ",".join((b.aliases or (b.id,))[0] for b in BENCHMARK_SPECS.values())
    p.add_argument("--benchmark", default="v1", choices=tuple(ALIASES), metavar=f"{{{shown}}}",
                   help="which benchmark to build: v1 (RULER's 13 tasks, config <tokenizer>; "
                        "the default) or v2 (RULERv2's 12 tasks, NeMo-Skills' ruler2: config "
                        "<tokenizer>--v2, rows whose length counts the prompt only, <= L, "
                        f"tokens_to_generate {RULER2_TOKENS_TO_GENERATE} on top; its MMLU and "
                        "HotpotQA inputs: `ruler sources fetch mmlu hotpotqa_hub`); ruler and "
                        "ruler2 are accepted too" + "".join(
                            f"; {b.id}: {b.title} (a plug-in's, {len(b.tasks)} tasks)"
                            for b in BENCHMARK_SPECS.values() if b.id not in (RULER, RULER2)))
    p.add_argument("--tasks", default="all",
                   help=f"comma-separated tasks of the benchmark (default: all; v1's 13: "
                        f"{', '.join(STANDARD_TASKS)}; v2's 12: {', '.join(RULER2_TASKS)})")
    p.add_argument("--lengths", default="4096", type=str,
                   help="comma-separated max sequence lengths, e.g. 4096,8192 or 4k,128k,1m; "
                        "'paper' = 4K..128K, 'long' = 256K,512K,1M (combinable: paper,long); "
                        "any length works, at most 2M (the longest tested); sources that run "
                        "out are repeated as upstream does (default: 4096)")
    p.add_argument("--samples", type=int, default=500,
                   help=f"samples per task and length (500, as upstream; at most "
                        f"{MAX_SAMPLES:,})")
    p.add_argument("--seed", type=int, default=42, help="base seed (42, as upstream)")
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT),
                   help=f"output folder (./{DEFAULT_OUT})")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default: all cores); each fits and writes whole "
                        "files, longest first (with fewer files than workers, they share the "
                        "samples of each file). With --executor ray: at most this many Ray "
                        "workers (default: one per CPU of the cluster)")
    p.add_argument("--shard", default="0/1", metavar="I/N",
                   help="build only shard I of N of the files, counting from 0 (the four "
                        "shards of --shard I/4 are 0/4 .. 3/4; default 0/1: all files)")
    p.add_argument("--sources", dest="sources_dir", default=None,
                   help=f"folder with the pinned sources, searched alone (a file it lacks is "
                        f"an error); without it: ${SOURCES_ENV}, then the cache")
    p.add_argument("--tokenizers-dir", default=None,
                   help=f"folder with pinned tokenizer files (else ${TOKENIZERS_ENV})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--start-method", choices=multiprocessing.get_all_start_methods(),
                   default=default_start_method(),
                   help="how worker processes start (default here: %(default)s; fork shares "
                        "the loaded tokenizer and corpora, spawn loads them in each worker; "
                        "the rows are the same)")
    p.add_argument("--exact-counts", action="store_true",
                   help="count every length probe by tokenizing the whole prompt (slow; the "
                        "default sums cached token counts of the prompt's pieces, checked "
                        "against whole-prompt counts, and gives the same rows)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace this tokenizer's files in OUT when they were built with "
                        "another seed, sample count, tokenizer or package versions (default: "
                        "refuse and say what differs); only files its manifest lists are removed")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="where files are built: 'local' (worker processes on this machine, the "
                        "default) or 'ray' (a Ray cluster: pip install 'ruler-bench[ray]'); each "
                        "Ray worker fits and encodes whole files, longest first, and streams "
                        "them back; this process publishes and records them, as with 'local'. "
                        "The rows are the same")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="the Ray cluster to use with --executor ray (e.g. 10.0.0.5:6379, or "
                        "'auto' for the one started on this machine); default: $RAY_ADDRESS, "
                        "else a Ray instance started here for the build. Every node needs this "
                        "ruler version and the tokenizer and source files at the same paths "
                        "(checked before any work)")
    p.add_argument("--sampled-certification", action="store_true",
                   help="for a tokenizer outside the registry, check piece counts against "
                        "whole-prompt tokenization on sampled rows only (faster); by default "
                        "every row is checked, as piece counting is proven only for the "
                        "registry's tokenizers. The card records which")
    # Each registered variant adds its own flag(s) (builder.variants): --depths, --output-budget,
    # --replicate / --replicates, --base
    for kind in variant_kinds():
        kind.add_arguments(p)
    # SIGTERM (a scheduler, `kill PID`) stops a build as Ctrl-C does: workers stopped, this
    # build's temporary files removed (ruler.cli.Terminated).
    p.set_defaults(func=run, interrupt_on_sigterm=True)


def run(args: argparse.Namespace) -> int:
    from ruler.builder.pipeline import BuildConfig

    # One config per variant; `--replicates K` asks for K of them, built one after the other,
    # each exactly as its own `--replicate i` command builds it.
    variants = variants_from_args(args)
    benchmark = benchmark_id(args.benchmark)
    lengths, shard = parse_lengths(args.lengths), parse_shard(args.shard)
    for variant in variants:
        if args.tasks not in (None, "all"):
            tasks = parse_tasks(args.tasks)
        else:
            tasks = variant.default_tasks() if benchmark == RULER \
                else BENCHMARK_SPECS[benchmark].tasks
        _build_one(args, BuildConfig(
            tokenizer=args.tokenizer, tasks=tasks, lengths=lengths,
            samples=args.samples, seed=args.seed, out=args.out, workers=args.workers,
            shard=shard, sources_dir=args.sources_dir,
            tokenizers_dir=args.tokenizers_dir, progress=not args.no_progress,
            exact_counts=args.exact_counts, start_method=args.start_method, variant=variant,
            overwrite=args.overwrite, sampled_certification=args.sampled_certification,
            executor=args.executor, ray_address=args.ray_address, benchmark=benchmark,
        ))
    return 0


def _build_one(args: argparse.Namespace, cfg: "BuildConfig") -> None:
    """Build one config and print what was built."""
    from ruler.builder.manifest import Manifest
    from ruler.builder.pipeline import run_build

    report = run_build(cfg)
    built = [f for f in report.files if not f.skipped]
    print(f"{report.config}: {len(built)} file(s) built, {len(report.files) - len(built)} "
          f"up to date, in {report.out}")
    for f in sorted(built, key=lambda f: (f.max_seq_length, f.task)):
        on = f", on Ray worker {f.worker}" if args.executor == "ray" else ""
        print(f"  {f.path}: {f.rows} rows, fill mean {f.fill_mean:.4f} min {f.fill_min:.4f}, "
              f"{f.seconds:.1f}s, {f.bytes / 1e6:.2f} MB{on}")
    if built:
        print(f"  ({FILL_DEFINITION})")
    fallback = [f for f in built if f.exact_rows and not args.exact_counts]
    if fallback:
        print(f"note: {len(fallback)} file(s) were counted by whole-prompt tokenization, because "
              f"this tokenizer's counts do not add up across the prompt's piece junctions "
              f"(slower, same exactness): {', '.join(f.path for f in fallback)}")
    build = Manifest.load(report.out).build(report.config)
    why = build.unofficial_reasons() if build is not None else []
    if why:
        print(f"note: {report.config} is an unofficial build ({'; '.join(why)}); the manifest "
              f"and the card say so, and `ruler release` refuses it without --allow-unofficial")
