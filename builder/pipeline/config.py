"""What a build is asked to do and what it reports: the types at the build's boundary."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ruler.builder.errors import RulerError
from ruler.builder.tasks import get_task
from ruler.builder.tasks.benchmarks import RULER, check_tasks, get_benchmark
from ruler.builder.tasks.catalog import STANDARD_TASKS
from ruler.builder.variants import NO_VARIANT, Variant, variant_flags

#: Not ./ruler: run from the repository root, a folder named `ruler` shadows the package.
DEFAULT_OUT = "ruler-data"


def default_start_method() -> str:
    """`fork` where the platform has it (workers inherit the loaded tokenizer and corpora for
    free), else `spawn` (macOS and Windows defaults), which sends workers a recipe instead."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


#: Where a build's file jobs can run (`--executor`).
EXECUTORS = ("local", "ray")

#: The longest length a build accepts: 2M tokens, the longest every task is tested at. Far
#: beyond it a sample's text and token counts outgrow memory (at 1e9 tokens vt used to fail
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


@dataclass(frozen=True)
class BuildConfig:
    """What to build. Mirrors the `ruler build` flags one to one."""

    tokenizer: str
    tasks: tuple[str, ...] = STANDARD_TASKS
    lengths: tuple[int, ...] = (4096,)
    samples: int = 500
    seed: int = 42
    out: Path = Path(DEFAULT_OUT)
    # Worker processes (local executor; default: every core) or at most this many Ray
    # actors (ray executor; default: one per CPU of the cluster).
    workers: int | None = None
    shard: tuple[int, int] = (0, 1)
    sources_dir: str | None = None
    tokenizers_dir: str | None = None
    progress: bool = True
    exact_counts: bool = False  # tokenize every probe whole (the reference; slow)
    start_method: str = field(default_factory=default_start_method)
    # The variant to build (builder.variants: DepthSweep(10) makes config
    # <tokenizer>--depth10, OutputBudget(16384) <tokenizer>--out16k); NO_VARIANT builds the
    # default config.
    variant: Variant = NO_VARIANT
    # Replace OUT's files of this config when they were built with another identity (seed,
    # samples, tokenizer, package versions); without it such a build refuses.
    overwrite: bool = False
    # Tokenizers outside the registry: certify piece counts on sampled rows only (the first
    # sample of each task and every SPOT_CHECK_EVERY-th) instead of every row.
    sampled_certification: bool = False
    # Where file jobs run: "local" (this machine: LocalExecutor) or "ray" (a Ray cluster at
    # ray_address, else $RAY_ADDRESS, else a Ray instance started here: RayExecutor).
    executor: str = "local"
    ray_address: str | None = None
    # The benchmark the tasks belong to (builder.tasks.benchmarks): "ruler" (RULER, the
    # default), or "ruler2" (RULERv2: config <tokenizer>--v2).
    benchmark: str = RULER

    def __post_init__(self) -> None:
        for t in self.tasks:
            get_task(t)
        if not self.tasks:
            raise RulerError("no tasks selected")
        bench = get_benchmark(self.benchmark)
        check_tasks(self.benchmark, self.tasks)
        if bench.variants is not None and self.variant.field not in bench.variants:
            flags = "/".join(flag for f in bench.variants if f for flag in variant_flags(f))
            raise RulerError(f"--benchmark {self.benchmark}: only {flags or 'no variant flag'} "
                             f"apply to {bench.title} configs (this build asks for variant "
                             f"{self.variant.field} = {self.variant.value!r})")
        if len(set(self.tasks)) != len(self.tasks) or len(set(self.lengths)) != len(self.lengths):
            raise RulerError("tasks and lengths must not repeat")
        if not self.lengths or any(not isinstance(L, int) or L <= 0 for L in self.lengths):
            raise RulerError(f"lengths must be positive integers, got {self.lengths}")
        too_long = max(self.lengths)
        if too_long > MAX_LENGTH:
            raise RulerError(f"--lengths: at most 2M ({MAX_LENGTH:,} tokens), the longest this "
                             f"builder is tested at; got {too_long:,}")
        if not isinstance(self.variant, Variant):
            raise RulerError(f"variant must be a ruler.builder.variants.Variant (NO_VARIANT for "
                             f"the default config), got {self.variant!r}")
        self.variant.check(self)
        if self.samples < 1:
            raise RulerError(f"--samples must be >= 1, got {self.samples}")
        if self.samples > MAX_SAMPLES:
            raise RulerError(f"--samples: at most {MAX_SAMPLES:,} per task and length (RULER "
                             f"uses 500); got {self.samples:,}")
        i, n = self.shard
        if n < 1 or not 0 <= i < n:
            raise RulerError(f"--shard must be i/n with 0 <= i < n, counting from 0 (the "
                             f"shards of n=4 are 0/4 .. 3/4), got {i}/{n}")
        if self.workers is not None and self.workers < 1:
            raise RulerError(f"--workers must be >= 1, got {self.workers}")
        if self.executor == "local" and (self.workers or 1) > MAX_LOCAL_WORKERS:
            raise RulerError(f"--workers: at most {MAX_LOCAL_WORKERS} processes on this machine; "
                             f"got {self.workers:,}")
        if self.executor not in EXECUTORS:
            raise RulerError(f"--executor must be one of {', '.join(EXECUTORS)}, "
                             f"got {self.executor!r}")
        if self.ray_address is not None and self.executor != "ray":
            raise RulerError("--ray-address needs --executor ray")
        methods = multiprocessing.get_all_start_methods()
        if self.start_method not in methods:
            raise RulerError(f"--start-method {self.start_method!r} is not available here; "
                             f"choose one of {', '.join(methods)}")


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


@dataclass
class BuildReport:
    out: Path
    config: str
    files: list[FileResult]
