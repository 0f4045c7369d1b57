"""Which benchmark a task belongs to: RULER (v1, id "ruler"), RULERv2 (id "ruler2") or
ONERULER (id "oneruler", RULER in 26 languages).

The one place that says so. A build makes one benchmark's tasks (`ruler build --benchmark`),
its configs say which (`<tokenizer>--v2` for RULERv2, `<tokenizer>--oneruler-<lang>` for
ONERULER: one config per language, `builder.tasks.oneruler_languages`) and its manifest entry
records the id (`"benchmark": "ruler2"`; absent means "ruler"); reports average a benchmark's
tasks.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping

from ruler.builder.tasks.catalog import (
    ONERULER_CROSS_LINGUAL_TASKS,
    ONERULER_TASKS,
    RULER2_TASKS,
    STANDARD_TASKS,
)
from ruler.builder.tasks.oneruler_languages import OnerulerLanguage

RULER = "ruler"
RULER2 = "ruler2"
ONERULER = "oneruler"

#: Benchmark id -> its tasks, in the benchmark's order.
BENCHMARKS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    RULER: STANDARD_TASKS,
    RULER2: RULER2_TASKS,
    ONERULER: ONERULER_TASKS,
})

#: What `--benchmark` accepts for each id.
ALIASES: Mapping[str, str] = MappingProxyType({
    "v1": RULER, RULER: RULER, "v2": RULER2, RULER2: RULER2, ONERULER: ONERULER})

#: What a benchmark's configs add to the tokenizer's config name (`llama-3.1--v2`): its rows
#: never mix with another benchmark's in one config. ONERULER's add the language too
#: (`llama-3.1--oneruler-ko`: `benchmark_config`).
CONFIG_SUFFIX: Mapping[str, str] = MappingProxyType({RULER: "", RULER2: "v2",
                                                     ONERULER: "oneruler"})

#: Benchmarks whose configs are per language (`BuildConfig.language`).
PER_LANGUAGE = frozenset({ONERULER})

#: The `--benchmark` flag that builds each benchmark's tasks (for messages).
BUILD_FLAG: Mapping[str, str] = MappingProxyType({
    RULER: "no --benchmark", RULER2: "--benchmark v2", ONERULER: "--benchmark oneruler"})

_OF_TASK = {task: bench for bench, tasks in BENCHMARKS.items() for task in tasks}


def benchmark_of(task: str) -> str:
    """The benchmark id of a catalog task; a registered (plug-in) task counts as RULER's,
    which is what a default build holds it beside."""
    return _OF_TASK.get(task, RULER)


#: The `--lengths` a build of each benchmark makes unless told otherwise: ONERULER's are the
#: paper's set (`catalog.ONERULER_LENGTHS`).
DEFAULT_LENGTHS: Mapping[str, str] = MappingProxyType({RULER: "4096", RULER2: "4096",
                                                       ONERULER: "oneruler"})


def benchmark_tasks(benchmark: str, language: OnerulerLanguage | None = None) -> tuple[str, ...]:
    """A benchmark's tasks, those a build makes unless told otherwise (a cross-lingual
    ONERULER config: the 5 NIAH tasks; upstream's CWE has no cross-lingual setting)."""
    if language is not None and language.cross_lingual:
        return ONERULER_CROSS_LINGUAL_TASKS
    return BENCHMARKS[benchmark]


def benchmark_config(base: str, benchmark: str,
                     language: OnerulerLanguage | None = None) -> str:
    """The config of `benchmark`'s rows for the tokenizer config `base` (and, for a
    per-language benchmark, `language`: `llama-3.1--oneruler-ko`, `--oneruler-en-ko`)."""
    if benchmark in PER_LANGUAGE:
        if language is None:
            raise ValueError(f"benchmark {benchmark!r} has one config per language: give one")
        return f"{base}--{language.config_suffix()}"
    suffix = CONFIG_SUFFIX[benchmark]
    return f"{base}--{suffix}" if suffix else base


def check_tasks(benchmark: str, tasks: Iterable[str]) -> None:
    """Refuse a build of `benchmark` holding another benchmark's tasks (RulerError)."""
    from ruler.builder.errors import RulerError

    other = [t for t in tasks if benchmark_of(t) != benchmark]
    if other:
        flag = BUILD_FLAG[benchmark_of(other[0])]
        raise RulerError(f"task(s) {', '.join(other)} are not {benchmark!r} tasks: build them "
                         f"with {flag} (a config holds one benchmark's rows)")


def ruler2_prompt_mode(has_chat_template: bool) -> str:
    """How RULERv2 rows are counted (`builder.tokenizer.PROMPT_MODES`): NeMo-Skills sends the
    question as the one user message and the server adds the generation prompt, which is
    what mode "reasoning" renders (a user turn and the generation prompt, nothing pre-filled;
    "chat" would continue an empty assistant turn, which for Llama 3 lacks the "\n\n" the
    generation prompt ends with). Without a chat template: BOS + the question ("base")."""
    return "reasoning" if has_chat_template else "base"


def benchmark_id(name: str) -> str:
    """The id `--benchmark NAME` means (v1, ruler, v2, ruler2, oneruler), or a RulerError."""
    try:
        return ALIASES[name]
    except KeyError:
        from ruler.builder.errors import RulerError

        raise RulerError(f"unknown benchmark {name!r}; known: "
                         f"{', '.join(ALIASES)}") from None
