"""Which benchmark a task belongs to: RULER (v1, id "ruler") or RULERv2 (id "ruler2").

The one place that says so. A build makes one benchmark's tasks (`ruler build --benchmark`),
its configs say which (`<tokenizer>--v2` for RULERv2) and its manifest entry records the id
(`"benchmark": "ruler2"`; absent means "ruler"); reports average a benchmark's tasks.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping

from ruler.builder.tasks.catalog import RULER2_TASKS, STANDARD_TASKS

RULER = "ruler"
RULER2 = "ruler2"

#: Benchmark id -> its tasks, in the benchmark's order.
BENCHMARKS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    RULER: STANDARD_TASKS,
    RULER2: RULER2_TASKS,
})

#: What `--benchmark` accepts for each id.
ALIASES: Mapping[str, str] = MappingProxyType({
    "v1": RULER, RULER: RULER, "v2": RULER2, RULER2: RULER2})

#: What a benchmark's configs add to the tokenizer's config name (`llama-3.1--v2`): its rows
#: never mix with another benchmark's in one config.
CONFIG_SUFFIX: Mapping[str, str] = MappingProxyType({RULER: "", RULER2: "v2"})

_OF_TASK = {task: bench for bench, tasks in BENCHMARKS.items() for task in tasks}


def benchmark_of(task: str) -> str:
    """The benchmark id of a catalog task; a registered (plug-in) task counts as RULER's,
    which is what a default build holds it beside."""
    return _OF_TASK.get(task, RULER)


def benchmark_config(base: str, benchmark: str) -> str:
    """The config of `benchmark`'s rows for the tokenizer config `base`."""
    suffix = CONFIG_SUFFIX[benchmark]
    return f"{base}--{suffix}" if suffix else base


def check_tasks(benchmark: str, tasks: Iterable[str]) -> None:
    """Refuse a build of `benchmark` holding another benchmark's tasks (RulerError)."""
    from ruler.builder.errors import RulerError

    other = [t for t in tasks if benchmark_of(t) != benchmark]
    if other:
        flag = "--benchmark v2" if benchmark_of(other[0]) == RULER2 else "no --benchmark"
        raise RulerError(f"task(s) {', '.join(other)} are not {benchmark!r} tasks: build them "
                         f"with {flag} (a config holds one benchmark's rows)")


def benchmark_id(name: str) -> str:
    """The id `--benchmark NAME` means (v1, ruler, v2, ruler2), or a RulerError."""
    try:
        return ALIASES[name]
    except KeyError:
        from ruler.builder.errors import RulerError

        raise RulerError(f"unknown benchmark {name!r}; known: "
                         f"{', '.join(ALIASES)}") from None
