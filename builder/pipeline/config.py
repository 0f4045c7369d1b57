"""What a build is asked to do and what it reports: the types at the build's boundary."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping

from ruler.benchmarks import DEFAULT
from ruler.builder.selection import (
    build_tasks_value,
    check_task_names,
    lengths_value,
    parse_lengths,
    shard_value,
)
from ruler.builder.tokenizer_registry import TOKENIZERS_ENV
from ruler.catalog import get_task
from ruler.catalog.benchmarks import (
    ALIASES,
    BENCHMARK_SPECS,
    benchmark_id,
    benchmark_tasks,
    check_tasks,
    get_benchmark,
)
from ruler.catalog.declared import declare_all, parse_declarations, read_task_file
from ruler.catalog.sources import SOURCES_ENV
from ruler.catalog.suites import benchmark_suites, find_suite
from ruler.catalog.variants import NO_VARIANT, Variant, variant_flags
from ruler.kernel.errors import RulerError
from ruler.kernel.flags import NEGATED, SWITCH, check_flags, option

#: Not ./ruler: run from the repository root, a folder named `ruler` shadows the package.
DEFAULT_OUT = "ruler-data"


def default_start_method() -> str:
    """`fork` where the platform has it (workers inherit the loaded tokenizer and corpora for
    free), else `spawn` (macOS and Windows defaults), which sends workers a recipe instead."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


#: Where a build's file jobs can run (`--executor`).
EXECUTORS = ("local", "ray")

#: The longest length a build accepts: 2M tokens, the longest every task is tested at. Far
#: beyond it a sample's text and token counts outgrow memory (at 1e9 tokens a task used to fail
#: with MemoryError after minutes and gigabytes).
MAX_LENGTH = 2 * 1024 * 1024
#: The most samples per task and length (RULER uses 500): a million 4K rows are ~4G tokens
#: per file; anything larger is a typo, refused before any work.
MAX_SAMPLES = 1_000_000
#: The most worker processes of the local executor: a pool forks all of them at once.
MAX_LOCAL_WORKERS = 1024


def local_workers(cfg: "BuildConfig") -> int:
    """The local executor's worker processes: `--workers`, else every core."""
    return cfg.workers or os.cpu_count() or 1


def _benchmark_help() -> str:
    """`--benchmark`'s help: what each benchmark says of itself (`Benchmark.help`), then the
    ids accepted besides their aliases, then those that say nothing (a plug-in's)."""
    told = [b.help for b in BENCHMARK_SPECS.values() if b.help]
    ids = [b.id for b in BENCHMARK_SPECS.values() if b.help and b.aliases]
    return ("which benchmark to build: " + _listing(told, "or")
            + (f"; {_listing(ids, 'and')} are accepted too" if ids else "") + "".join(
                f"; {b.id}: {b.title} (a plug-in's, {len(b.tasks)} tasks)"
                for b in BENCHMARK_SPECS.values() if not b.help))


def _listing(items: list[str], last: str) -> str:
    return ", ".join(items[:-1]) + f" {last} {items[-1]}" if len(items) > 1 else "".join(items)


def _benchmark_metavar() -> str:
    return "{" + ",".join((b.aliases or (b.id,))[0] for b in BENCHMARK_SPECS.values()) + "}"


def _tasks_help() -> str:
    return ("comma-separated tasks of the benchmark (default: all; " + "; ".join(
        f"{(b.aliases or (b.id,))[0]}'s {len(b.tasks)}: {', '.join(b.tasks)}"
        for b in BENCHMARK_SPECS.values()) + ")")


def _suite_help() -> str:
    """`--suite`'s help: each benchmark's suites (`Benchmark.suites`)."""
    offered = [f"{b.title}'s: {', '.join(suites)}" for b in BENCHMARK_SPECS.values()
               if (suites := benchmark_suites(b))]
    return ("build a named set of configurations (a paper's figure panels), its standard "
            "tasks' rows the default config's; " + ("; ".join(offered) or "none installed")
            + " (the card lists each one's configurations and their sources)")


def _lengths_help() -> str:
    named = "".join(f", '{name}' = {','.join(map(str, lengths))} ({b.title}'s)"
                    for b in BENCHMARK_SPECS.values() for name, lengths in b.length_sets.items())
    defaults = "".join(f"; with --benchmark {(b.aliases or (b.id,))[0]}: {b.default_lengths}"
                       for b in BENCHMARK_SPECS.values() if b.default_lengths != "4096")
    return ("comma-separated max sequence lengths, e.g. 4096,8192 or 4k,128k,1m; 'paper' = "
            "4K..128K, 'long' = 256K,512K,1M (combinable: paper,long)" + named + "; any length "
            "works, at most 2M (the longest tested); sources that run out are repeated as "
            f"upstream does (default: 4096{defaults})")


@dataclass(frozen=True)
class BuildConfig:
    """What to build: one config of one tokenizer. Each field but `variant` is a `ruler build`
    flag (declared on the field: `ruler.kernel.flags`); the variant is asked for by the
    variant kinds' own flags (`ruler.catalog.variants`). `ruler.build(...)` takes the same
    fields as keywords."""

    tokenizer: str = option(
        "--tokenizer", required=True,
        help="registry name, a local tokenizer folder, or a Hub id org/name@revision")
    # The benchmark the tasks belong to (catalog.benchmarks; default: the default
    # benchmark, `ruler.benchmarks.DEFAULT`); an alias (v1, v2) is settled to its id.
    benchmark: str = option(
        "--benchmark", default=DEFAULT, text_default="v1", choices=lambda: tuple(ALIASES),
        metavar=_benchmark_metavar, help=_benchmark_help)
    # (): the benchmark's tasks; with a variant, those it applies to (settled on creation).
    tasks: tuple[str, ...] = option(
        "--tasks", default=(), text_default="all", parse=build_tasks_value, help=_tasks_help)
    # Tasks of the benchmark's families with the complexity the user asks for
    # (`ruler.catalog.declared`), in the generators' own schema; built unless `--tasks`
    # says otherwise.
    task_file: Path | None = option(
        "--task-file", default=None, type=Path, metavar="YAML",
        help="declare tasks in upstream's schema, a YAML mapping `name: {task: <family>, args: "
             "{...}}` (NVIDIA/RULER's scripts/synthetic.yaml is one); each argument is checked "
             "against its domain, and the declared tasks are built unless --tasks names others")
    declare: str | None = option(
        "--declare", default=None, metavar="TASKS",
        help="declare tasks on one line: NAME=FAMILY:ARG=VALUE,ARG=VALUE, several separated by "
             "';' (e.g. 'niah_k8=niah:num_needle_k=8'); as --task-file")
    # A named set of the benchmark's configurations (`Benchmark.suites`: a paper's figure
    # panels), its declared tasks declared and all its tasks built unless --tasks says
    # otherwise; the manifest records its name.
    suite: str | None = option(
        "--suite", default=None, metavar="NAME", help=lambda: _suite_help())
    # (): the benchmark's default lengths (`Benchmark.default_lengths`, settled on creation).
    lengths: tuple[int, ...] = option(
        "--lengths", default=(), text_default="4096", parse=lengths_value, help=_lengths_help)
    samples: int = option(
        "--samples", default=500, type=int, minimum=1,
        help=f"samples per task and length (500, as upstream; at most {MAX_SAMPLES:,})")
    seed: int = option("--seed", default=42, type=int, help="base seed (42, as upstream)")
    out: Path = option("--out", default=Path(DEFAULT_OUT), type=Path,
                       help=f"output folder (./{DEFAULT_OUT})")
    workers: int | None = option(
        "--workers", default=None, type=int, minimum=1,
        help="worker processes (default: all cores); each fits and writes whole files, longest "
             "first (with fewer files than workers, they share the samples of each file). With "
             "--executor ray: at most this many Ray workers (default: one per CPU of the "
             "cluster)")
    shard: tuple[int, int] = option(
        "--shard", default=(0, 1), text_default="0/1", parse=shard_value, metavar="I/N",
        help="build only shard I of N of the files, counting from 0 (the four shards of "
             "--shard I/4 are 0/4 .. 3/4; default 0/1: all files)")
    sources_dir: str | None = option(
        "--sources", default=None, metavar="SOURCES_DIR",
        help=f"folder with the pinned sources, searched alone (a file it lacks is an error); "
             f"without it: ${SOURCES_ENV}, then the cache")
    tokenizers_dir: str | None = option(
        "--tokenizers-dir", default=None,
        help=f"folder with pinned tokenizer files (else ${TOKENIZERS_ENV})")
    progress: bool = option("--no-progress", kind=NEGATED, default=True, help="no progress bar")
    start_method: str = option(
        "--start-method", default_factory=default_start_method,
        choices=lambda: tuple(multiprocessing.get_all_start_methods()),
        help="how worker processes start (default here: %(default)s; fork shares the loaded "
             "tokenizer and corpora, spawn loads them in each worker; the rows are the same)")
    exact_counts: bool = option(  # tokenize every probe whole (the reference; slow)
        "--exact-counts", kind=SWITCH, default=False,
        help="count every length probe by tokenizing the whole prompt (slow; the default sums "
             "cached token counts of the prompt's pieces, checked against whole-prompt counts, "
             "and gives the same rows)")
    overwrite: bool = option(
        "--overwrite", kind=SWITCH, default=False,
        help="replace this tokenizer's files in OUT when they were built with another seed, "
             "sample count, tokenizer or package versions (default: refuse and say what "
             "differs); only files its manifest lists are removed")
    executor: str = option(
        "--executor", default="local", choices=EXECUTORS,
        help="where files are built: 'local' (worker processes on this machine, the default) "
             "or 'ray' (a Ray cluster: pip install 'ruler-bench[ray]'); each Ray worker fits "
             "and encodes whole files, longest first, and streams them back; this process "
             "publishes and records them, as with 'local'. The rows are the same")
    ray_address: str | None = option(
        "--ray-address", default=None, metavar="ADDR",
        help="the Ray cluster to use with --executor ray (e.g. 10.0.0.5:6379, or 'auto' for "
             "the one started on this machine); default: $RAY_ADDRESS, else a Ray instance "
             "started here for the build. Every node needs this ruler version and the "
             "tokenizer and source files at the same paths (checked before any work)")
    # Tokenizers outside the registry: certify piece counts on sampled rows only (the first
    # sample of each task and every SPOT_CHECK_EVERY-th) instead of every row.
    sampled_certification: bool = option(
        "--sampled-certification", kind=SWITCH, default=False,
        help="for a tokenizer outside the registry, check piece counts against whole-prompt "
             "tokenization on sampled rows only (faster); by default every row is checked, as "
             "piece counting is proven only for the registry's tokenizers. The card records "
             "which")
    # The variant to build (catalog.variants: DepthSweep(10) makes config
    # <tokenizer>--depth10, OutputBudget(16384) <tokenizer>--out16k); NO_VARIANT builds the
    # default config. Its flags are the variant kinds' own.
    variant: Variant = NO_VARIANT
    # The value of each of the benchmark's axes, by axis name (`Benchmark.axes`: a string is
    # parsed, `{"language": "ko"}`): one of each required, none other taken. `ruler build`
    # makes one config per value its axis flag names (`ruler.commands.build`).
    axes: Mapping[str, Any] = field(default_factory=dict)
    # Render the card once the build's files are recorded (no flag: a command that builds
    # several configs into one OUT, `pipeline.run.run_builds`, renders it once at its end).
    render_card: bool = True

    def __post_init__(self) -> None:
        check_flags(self)
        settle = partial(object.__setattr__, self)  # a frozen dataclass settles its defaults
        settle("benchmark", benchmark_id(self.benchmark))
        if not isinstance(self.variant, Variant):
            raise RulerError(f"variant must be a ruler.catalog.variants.Variant (NO_VARIANT for "
                             f"the default config), got {self.variant!r}")
        bench = get_benchmark(self.benchmark)
        unknown = sorted(set(self.axes) - {a.name for a in bench.axes})
        if unknown:
            raise RulerError(f"--benchmark {self.benchmark}: its configs have no "
                             f"{', '.join(unknown)}")
        missing = [a for a in bench.axes if self.axes.get(a.name) is None]
        if missing:
            raise RulerError(f"--benchmark {self.benchmark}: give the {missing[0].name}(s) to "
                             f"build ({missing[0].flag})")
        settle("axes", {a.name: a.parse(v) if isinstance(v := self.axes[a.name], str) else v
                        for a in bench.axes})
        suite = find_suite(bench, self.suite) if self.suite is not None else None
        declared = declare_all(
            (read_task_file(self.task_file) if self.task_file is not None else [])
            + (parse_declarations(self.declare) if self.declare else [])
            + (suite.declarations() if suite is not None else []))
        if not self.tasks:
            asked = tuple(dict.fromkeys((*(suite.task_names if suite else ()), *declared)))
            settle("tasks", self.variant.default_tasks(
                asked or benchmark_tasks(self.benchmark, self.axes)))
        check_task_names(self.tasks)
        if not self.lengths:
            settle("lengths", parse_lengths(get_benchmark(self.benchmark).default_lengths))
        for t in self.tasks:
            get_task(t)
        if not self.tasks:
            raise RulerError("no tasks selected")
        check_tasks(self.benchmark, self.tasks)
        if bench.variants is not None and self.variant.field not in bench.variants:
            flags = "/".join(flag for f in bench.variants if f for flag in variant_flags(f))
            raise RulerError(f"--benchmark {self.benchmark}: only {flags or 'no variant flag'} "
                             f"apply to {bench.title} configs (this build asks for variant "
                             f"{self.variant.field} = {self.variant.value!r})")
        for axis in bench.axes:
            axis.check(self.axes[axis.name], self.tasks)
        if len(set(self.tasks)) != len(self.tasks) or len(set(self.lengths)) != len(self.lengths):
            raise RulerError("tasks and lengths must not repeat")
        if not self.lengths or any(not isinstance(L, int) or L <= 0 for L in self.lengths):
            raise RulerError(f"lengths must be positive integers, got {self.lengths}")
        too_long = max(self.lengths)
        if too_long > MAX_LENGTH:
            raise RulerError(f"--lengths: at most 2M ({MAX_LENGTH:,} tokens), the longest this "
                             f"builder is tested at; got {too_long:,}")
        self.variant.check(self)
        if self.samples > MAX_SAMPLES:
            raise RulerError(f"--samples: at most {MAX_SAMPLES:,} per task and length (RULER "
                             f"uses 500); got {self.samples:,}")
        i, n = self.shard
        if n < 1 or not 0 <= i < n:
            raise RulerError(f"--shard must be i/n with 0 <= i < n, counting from 0 (the "
                             f"shards of n=4 are 0/4 .. 3/4), got {i}/{n}")
        if self.executor == "local" and (self.workers or 1) > MAX_LOCAL_WORKERS:
            raise RulerError(f"--workers: at most {MAX_LOCAL_WORKERS} processes on this machine; "
                             f"got {self.workers:,}")
        if self.ray_address is not None and self.executor != "ray":
            raise RulerError("--ray-address needs --executor ray")


@dataclass(frozen=True)
class FileJob:
    """One split file to build: pure data, the same wherever it runs. The rows themselves
    come from the build recipe the worker holds; the job says which file, where, and under
    which build key."""

    out: Path  # the folder the file is written in (a Ray worker writes to its own scratch)
    config: str
    task: str
    max_seq_length: int
    samples: int  # rows 0 .. samples-1
    build_key: str  # changes whenever anything that shapes the file's rows changes
    # What the file's manifest entry records of its build (the worker makes the whole entry):
    # the identity's package versions, and whether the tokenizer is a pinned registry one
    # (its piece counts are then proven, not sampled: builder.counting.counting_method).
    packages: Mapping[str, str]
    tokenizer_pinned: bool

    @property
    def path(self) -> str:
        """Relative to `out`: data/<config>/<task>/<L>.parquet."""
        # Imported here: the CLI imports this module for its flags' defaults, and the
        # manifest module pulls in pyarrow.
        from ruler.builder.manifest import data_path

        return data_path(self.config, self.task, self.max_seq_length)


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
    certified_rows: int = 0  # rows whose piece counts were checked against a whole count
    worker: str = ""  # host:pid of the process that built it
    peak_rss_mb: float = 0.0  # that process's peak resident memory when the file was done
    # rows shorter than the benchmark's fill promise, kept because they hold all of their
    # task's inputs (a language's whole dictionary)
    short_at_bound: int = 0


@dataclass
class BuildReport:
    out: Path
    config: str
    files: list[FileResult]
