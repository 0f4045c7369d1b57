"""Benchmarks: RULER (v1, id "ruler"), RULERv2 (id "ruler2") and ONERULER (id "oneruler",
RULER in 26 languages), or a plug-in's.

A `Benchmark` is a set of tasks (hence their families, sources and metrics), how its configs are
named and its rows counted, how its scores aggregate and the card's section about it; the one
place that says which benchmark a task belongs to. A build makes one benchmark's tasks
(`ruler build --benchmark`), its configs say which (`<tokenizer>--v2` for RULERv2,
`<tokenizer>--oneruler-<lang>` for ONERULER: one config per language,
`builder.tasks.oneruler_languages`) and its manifest entry records the id
(`"benchmark": "ruler2"`; absent means "ruler"); reports average a benchmark's tasks.
Benchmarks are entries of `BENCHMARK_SPECS` (a `ruler.builder.registry.Registry`): a plug-in
offers one in entry point group `ruler.benchmarks` (`id = "pkg.module:BENCHMARK"`), its tasks
registered by its families' plug-in (`ruler.task_families`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, TypeVar

from ruler.builder.errors import RulerError
from ruler.builder.registry import Registry
from ruler.builder.tasks.catalog import (
    ONERULER_CROSS_LINGUAL_TASKS,
    ONERULER_TASKS,
    RULER2_TASKS,
    STANDARD_TASKS,
    get_task,
)
from ruler.builder.tasks.oneruler_languages import OnerulerLanguage

RULER = "ruler"
RULER2 = "ruler2"
ONERULER = "oneruler"


def ruler2_prompt_mode(has_chat_template: bool) -> str:
    """How RULERv2 rows are counted (`builder.tokenizer.PROMPT_MODES`): NeMo-Skills sends the
    question as the one user message and the server adds the generation prompt, which is
    what mode "reasoning" renders (a user turn and the generation prompt, nothing pre-filled;
    "chat" would continue an empty assistant turn, which for Llama 3 lacks the "\n\n" the
    generation prompt ends with). Without a chat template: BOS + the question ("base")."""
    return "reasoning" if has_chat_template else "base"


@dataclass(frozen=True)
class FillPromise:
    """How full a benchmark promises its rows are: each row's `length` is at least `share` of its
    L, or falls short of L by at most `tokens` (at short lengths one haystack unit, an MMLU
    question with its choices, is a large share of L: RULERv2's at 1024 fill down to 0.58; a
    task whose units are documents of any size promises nothing: `FamilySpec.units_bounded`).
    The fitter leaves a row short of L by less than one unit, so a row far below is a unit far
    larger than it should be (ONERULER's Spanish "sentences" of 60,000 tokens once left rows at
    0.07 of L) or a source that ran out. `ruler build` refuses such a row before its file is
    written and `ruler verify` reports it, except a row that holds all of its task's inputs
    where the task keeps such rows (`TaskGenerator.short_at_bound`)."""

    share: float = 0.9
    tokens: int = 1024

    def problem(self, length: int, max_seq_length: int) -> str | None:
        """Why a row of `length` tokens breaks the promise at L = `max_seq_length`, or None."""
        short = max_seq_length - length
        if length >= self.share * max_seq_length or short <= self.tokens:
            return None
        return (f"fill {length / max_seq_length:.3f} ({length:,} of {max_seq_length:,} "
                f"tokens): rows of this benchmark fill at least {self.share:g} of L or fall "
                f"short by at most {self.tokens:,} tokens")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark.

    Attributes:
        id: what the manifest's build entry records (`"benchmark"`) and reports name.
        title: its name in reports and the card ("RULER", "RULERv2").
        tasks: its catalog tasks, in the benchmark's order (what `--tasks all` builds).
        aliases: what `ruler build --benchmark` accepts besides the id, the first one shown.
        config_suffix: added to the tokenizer's config name (`llama-3.1--v2`): a config holds
            one benchmark's rows; "" for RULER's.
        prompt_mode: `prompt_mode(has_chat_template)`, how its rows are counted
            (`builder.tokenizer.PROMPT_MODES`); None: as the build's variant says (RULER).
        variants: the variant fields (`builder.variants`) its configs may have ("" is the
            default config); None: every variant.
        weighted_average: how its scores aggregate: True, RULER's Avg. over lengths with
            upstream's wAvg. (inc/dec) and effective length; False, the per-length plain mean
            and Avg. only (RULERv2, `eval.aggregate.summarize`).
        card_section: "package.module:function" of the card's section about it,
            `function(manifest) -> str` ("" for a folder without its configs); None: none.
        per_language: its configs are one per language (`BuildConfig.language`, ONERULER's
            `<tokenizer>--oneruler-<lang>`); False: one config per tokenizer and variant.
        cross_lingual_tasks: the tasks a cross-lingual config (context in one language,
            instructions in another) builds unless told otherwise (ONERULER: the 5 NIAH tasks;
            upstream's CWE has no cross-lingual setting).
        default_lengths: the `--lengths` a build makes unless told otherwise (ONERULER's are
            the paper's set, `--lengths oneruler`).
        fill: how full its rows are (`FillPromise`), checked on every row by the build and
            by `ruler verify`.
    """

    id: str
    title: str
    tasks: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    config_suffix: str = ""
    prompt_mode: Callable[[bool], str] | None = None
    variants: tuple[str, ...] | None = None
    weighted_average: bool = True
    card_section: str | None = None
    per_language: bool = False
    cross_lingual_tasks: tuple[str, ...] = ()
    default_lengths: str = "4096"
    fill: FillPromise = FillPromise()

    @property
    def flag(self) -> str:
        """How `ruler build` asks for it."""
        return "no --benchmark" if self.id == RULER else \
            f"--benchmark {(self.aliases or (self.id,))[0]}"

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(get_task(t).family.name for t in self.tasks))

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for t in self.tasks for s in get_task(t).sources))

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(get_task(t).metric for t in self.tasks))


#: Every benchmark by id: RULER's two, then a plug-in's (entry point group `ruler.benchmarks`).
BENCHMARK_SPECS: Registry[Benchmark] = Registry(
    "benchmark", "ruler.benchmarks", accepts=lambda obj: isinstance(obj, Benchmark),
    name_of=lambda b: b.id)

BENCHMARK_SPECS.register(Benchmark(RULER, "RULER", STANDARD_TASKS, aliases=("v1",)),
                         origin="ruler")
BENCHMARK_SPECS.register(Benchmark(
    RULER2, "RULERv2", RULER2_TASKS, aliases=("v2",), config_suffix="v2",
    prompt_mode=ruler2_prompt_mode,
    # its rows count no output budget and have no depth sweep, base or no-context variant
    variants=("", "replicate"), weighted_average=False,
    card_section="ruler.cards.ruler2:ruler2_section"), origin="ruler")
BENCHMARK_SPECS.register(Benchmark(
    ONERULER, "ONERULER", ONERULER_TASKS, config_suffix="oneruler",
    # its rows follow RULER's length rule (the prompt as the model reads it + the budget <= L)
    # and have no depth sweep, base or no-context variant
    variants=("", "replicate"), weighted_average=False,
    card_section="ruler.cards.oneruler:oneruler_section", per_language=True,
    cross_lingual_tasks=ONERULER_CROSS_LINGUAL_TASKS, default_lengths="oneruler"),
    origin="ruler")


_Fact = TypeVar("_Fact")


class _View(Mapping[str, _Fact]):
    """A read-only view of one fact of every benchmark, as the registry holds them now."""

    def __init__(self, table: Callable[[], dict[str, _Fact]]):
        self._table = table

    def __getitem__(self, key: str) -> _Fact:
        return self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return repr(self._table())


#: Benchmark id -> its tasks, in the benchmark's order.
BENCHMARKS: Mapping[str, tuple[str, ...]] = _View(
    lambda: {b.id: b.tasks for b in BENCHMARK_SPECS.values()})

#: What `--benchmark` accepts, mapped to the id.
ALIASES: Mapping[str, str] = _View(
    lambda: {name: b.id for b in BENCHMARK_SPECS.values() for name in (*b.aliases, b.id)})

#: What a benchmark's configs add to the tokenizer's config name (`llama-3.1--v2`): its rows
#: never mix with another benchmark's in one config. ONERULER's add the language too
#: (`llama-3.1--oneruler-ko`: `benchmark_config`).
CONFIG_SUFFIX: Mapping[str, str] = _View(
    lambda: {b.id: b.config_suffix for b in BENCHMARK_SPECS.values()})

#: The `--lengths` a build of each benchmark makes unless told otherwise.
DEFAULT_LENGTHS: Mapping[str, str] = _View(
    lambda: {b.id: b.default_lengths for b in BENCHMARK_SPECS.values()})


def get_benchmark(benchmark_id: str) -> Benchmark:
    """The benchmark of id `benchmark_id` (an unknown id: a RulerError naming the known)."""
    return BENCHMARK_SPECS[benchmark_id]


def benchmark_of(task: str) -> str:
    """The benchmark id of a catalog task; a registered task no benchmark lists counts as
    RULER's, which is what a default build holds it beside."""
    for b in BENCHMARK_SPECS.values():
        if task in b.tasks:
            return b.id
    return RULER


def per_language(benchmark: str) -> bool:
    """Whether `benchmark`'s configs are one per language (ONERULER's)."""
    return get_benchmark(benchmark).per_language


def benchmark_tasks(benchmark: str, language: OnerulerLanguage | None = None) -> tuple[str, ...]:
    """A benchmark's tasks, those a build makes unless told otherwise (a cross-lingual config:
    its benchmark's `cross_lingual_tasks`)."""
    bench = get_benchmark(benchmark)
    if language is not None and language.cross_lingual:
        return bench.cross_lingual_tasks
    return bench.tasks


def benchmark_config(base: str, benchmark: str,
                     language: OnerulerLanguage | None = None) -> str:
    """The config of `benchmark`'s rows for the tokenizer config `base` (and, for a
    per-language benchmark, `language`: `llama-3.1--oneruler-ko`, `--oneruler-en-ko`)."""
    bench = get_benchmark(benchmark)
    if bench.per_language:
        if language is None:
            raise ValueError(f"benchmark {benchmark!r} has one config per language: give one")
        return f"{base}--{language.config_suffix()}"
    return f"{base}--{bench.config_suffix}" if bench.config_suffix else base


def check_tasks(benchmark: str, tasks: Iterable[str]) -> None:
    """Refuse a build of `benchmark` holding another benchmark's tasks (RulerError)."""
    other = [t for t in tasks if benchmark_of(t) != benchmark]
    if other:
        flag = get_benchmark(benchmark_of(other[0])).flag
        raise RulerError(f"task(s) {', '.join(other)} are not {benchmark!r} tasks: build them "
                         f"with {flag} (a config holds one benchmark's rows)")


def benchmark_id(name: str) -> str:
    """The id `--benchmark NAME` means (v1, ruler, v2, ruler2, oneruler, a plug-in's), or a
    RulerError."""
    try:
        return ALIASES[name]
    except KeyError:
        raise RulerError(f"unknown benchmark {name!r}; known: "
                         f"{', '.join(ALIASES)}") from None

