"""The benchmark API: a `Benchmark` declares everything specific to one benchmark, and generic
machinery asks it instead of naming it.

A benchmark is a set of tasks (hence their families), the sources they read, the metrics that
score them, how its rows' `length` is counted (`length_rule`) and prompts rendered
(`prompt_mode`), the axes its configs are built along (`BuildAxis`: a language, one
config per value), how its scores aggregate (`Aggregation`), and the addresses of the code that
writes its report sections, its card text, its exports and its release gates, all in its own
folder. The manifest's build entry records which benchmark a config holds (`"benchmark"`;
absent: `ruler.benchmarks.DEFAULT`), its axis values and, for a plug-in's, the package that
provides it; every later reader takes them from there, never from a config's or task's name.

Benchmarks are entries of `BENCHMARK_SPECS` (a `ruler.kernel.registry.Registry`): the
built-ins by the addresses `ruler.benchmarks.BUILTIN` lists, a plug-in's through entry point
group `ruler.benchmarks` (`id = "pkg.module:BENCHMARK"`), its tasks registered by its module
or by its families' plug-in (`ruler.task_families`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ruler.benchmarks import BUILTIN, DEFAULT
from ruler.catalog.declared import is_declared
from ruler.catalog.length_rules import PROMPT_AND_OUTPUT
from ruler.catalog.tasks import ON_MISS, TASKS, get_task
from ruler.kernel.errors import RulerError
from ruler.kernel.registry import LiveView, Registry, UnknownName, builtin_code, load_target


@dataclass(frozen=True)
class FillPromise:
    """How full a benchmark promises its rows are: each row's `length` is at least `share` of its
    L, or falls short of L by at most `tokens` (at short lengths one haystack unit, an MMLU
    question with its choices, is a large share of L: rows at 1024 fill down to 0.58; a
    task whose units are documents of any size promises nothing: `FamilySpec.units_bounded`).
    The fitter leaves a row short of L by less than one unit, so a row far below is a unit far
    larger than it should be (Spanish book "sentences" of 60,000 tokens once left rows at
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


class BuildAxis(ABC):
    """A dimension a benchmark's configs are built along, one config per value (a
    language: `ko`, or the cross-lingual pair `en-ko`). `ruler build` takes several values with
    the axis's flag (`--languages ko,fr`), `ruler.build()` one with its name as a keyword
    (`language="ko"`); the manifest's build entry records the value under `name`, and scores
    record its `code` (`axes`), which every reader takes it from.

    Attributes:
        name: the key the manifest's build entry and the scores record it under.
        flag: the `ruler build` flag naming values, comma-separated (none: all of them).
        help: the flag's help.
    """

    name: str
    flag: str
    help: str = ""

    @abstractmethod
    def parse(self, text: str) -> Any:
        """One value as the flag and `ruler.build()` spell it (a RulerError if malformed)."""

    @abstractmethod
    def every(self) -> tuple[Any, ...]:
        """The values the flag builds when not given."""

    @abstractmethod
    def record(self, value: Any) -> Any:
        """The JSON the manifest's build entry records for `value`."""

    @abstractmethod
    def from_record(self, data: Any) -> Any:
        """The value a manifest records (a RulerError if malformed)."""

    @abstractmethod
    def code(self, value: Any) -> str:
        """`value` as one short string (what scores record, what reports show)."""

    def config_suffix(self, value: Any) -> str:
        """What a config of `value` adds to the tokenizer's config name."""
        return self.code(value)

    def tasks(self, value: Any, tasks: tuple[str, ...]) -> tuple[str, ...]:
        """The tasks a config of `value` builds unless told otherwise."""
        return tasks

    def check(self, value: Any, tasks: Sequence[str]) -> None:  # noqa: B027 (a hook)
        """Refuse (RulerError) tasks a config of `value` cannot build."""

    def values(self, text: str | None) -> tuple[Any, ...]:
        """The values the flag names: comma-separated, or all of them (`all`, or nothing)."""
        if not text or text.strip() == "all":
            return self.every()
        out = [self.parse(part) for part in text.split(",") if part.strip()]
        if len(set(out)) != len(out):
            raise RulerError(f"{self.flag} {text!r} names a {self.name} twice")
        return tuple(out)


@dataclass(frozen=True)
class Aggregation:
    """How a benchmark's task scores make its headline: per length an aggregate of the task
    scores (`per_length`, the plain mean unless a subclass says otherwise), their mean over the
    lengths (Avg.), and where the benchmark defines them, the weighted averages over lengths
    (wAvg. inc/dec, RULER's) and the effective length (the longest length whose score exceeds a
    threshold at it and every shorter one, RULER's). `text` ends the report's sentence on
    what the per-length score is ("the plain mean of the 7 task scores ...")."""

    weighted: bool = False
    effective_length: bool = False
    text: str = ""

    def per_length(self, scores: Sequence[float]) -> float:
        """The score of one length from its tasks' scores."""
        return sum(scores) / len(scores)

    def per_length_text(self, tasks: int) -> str:
        """What the per-length score is, for the report."""
        return f"the plain mean of the {tasks} task scores"


def english(axes: Mapping[str, object]) -> tuple[str, ...]:
    """The languages of a config's rows: English, whatever its axes."""
    return ("en",)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark.

    Attributes:
        id: what the manifest's build entry records (`"benchmark"`) and reports name.
        title: its name in reports and the card ("RULER").
        tasks: its catalog tasks, in the benchmark's order (what `--tasks all` builds).
        aliases: what `ruler build --benchmark` accepts besides the id, the first one shown.
        help: what `--benchmark`'s help says of it.
        family: the benchmark family its published results and card text belong to
            ("RULER" for RULER's three; default: its title).
        config_suffix: added to the tokenizer's config name (`llama-3.1--v2`): a config holds
            one benchmark's rows; "" for RULER's.
        prompt_mode: `prompt_mode(has_chat_template)`, how its rows are counted
            (`catalog.tokenizer.PROMPT_MODES`); None: as the build's variant says (RULER).
        length_rule: how its rows' `length` is counted (`catalog.length_rules`): the prompt
            and `tokens_to_generate` within L, or the prompt alone (a benchmark whose answer
            comes on top); each file's manifest entry records it.
        variants: the variant fields (`catalog.variants`) its configs may have ("" is the
            default config); None: every variant.
        axes: what its configs are built along (`BuildAxis`), one config per value.
        default_lengths: the `--lengths` a build makes unless told otherwise.
        length_sets: named `--lengths` sets it adds.
        fill: how full its rows are (`FillPromise`), checked on every row by the build and
            by `ruler verify`.
        aggregation: how its scores aggregate (`Aggregation`).
        sources: its pinned inputs (`catalog.sources.SourceSpec`), which `ruler sources`
            lists and fetches.
        metrics: the metrics its rows name (name -> `eval.metrics.specs.MetricSpec`), registered
            when it loads; a metric whose `replaces` names another may rescore its rows.
        packages: the packages its generators add to what shapes its rows (recorded by its
            builds: `builder.packages`).
        tags: what the card's front matter adds to its tags for a folder holding it.
        languages: `languages(axes)`: the languages of a config's rows (ISO 639-1 codes), for
            the card, from the config's axis values.
        card_section, card_body, report, lm_eval, failure_labels, fake_answers: the addresses
            ("package.module:ATTR") of the code in its folder that writes the card's section
            about it (`function(manifest) -> str`) and its family's card text (intro, tasks,
            differences, citation: `cards.render.CardBody`), its report sections
            (`eval.report.run.ReportHooks`), its lm-evaluation-harness export
            (`eval.integrations.lm_eval_export.LmEvalHooks`), its failure-mode labels
            (`label_cell(...)`) and the fake backend's failures on purpose
            (`eval.backends.fake.FakeAnswers`); None: none.
        release_gates: addresses of what `ruler release` asks of its configs
            (`release_gates.ReleaseGate`: a flag and a check, a licence acknowledgement).
    """

    id: str
    title: str
    tasks: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    help: str = ""
    family: str = ""
    config_suffix: str = ""
    prompt_mode: Callable[[bool], str] | None = None
    length_rule: str = PROMPT_AND_OUTPUT
    variants: tuple[str, ...] | None = None
    axes: tuple[BuildAxis, ...] = ()
    default_lengths: str = "4096"
    length_sets: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    fill: FillPromise = FillPromise()
    aggregation: Aggregation = Aggregation()
    sources: tuple[Any, ...] = ()
    metrics: Mapping[str, object] = field(default_factory=dict)
    packages: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    languages: Callable[[Mapping[str, object]], tuple[str, ...]] = english
    card_section: str | None = None
    card_body: str | None = None
    report: str | None = None
    lm_eval: str | None = None
    failure_labels: str | None = None
    fake_answers: str | None = None
    # the address of its suites (`tasks.suites.Suite` by name: `ruler build --suite`); None:
    # none
    suites: str | None = None
    release_gates: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        """How `ruler build` asks for it."""
        return "no --benchmark" if self.id == DEFAULT else \
            f"--benchmark {(self.aliases or (self.id,))[0]}"

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(get_task(t).family.name for t in self.tasks))

    def hook(self, name: str) -> Any:
        """The object at hook `name`'s address (None: the benchmark has none)."""
        address = getattr(self, name)
        return None if address is None else load_target(address)

    def hook_list(self, name: str) -> list[Any]:
        """The objects at the addresses of hook list `name` (`release_gates`)."""
        return [load_target(address) for address in getattr(self, name)]

    def axis(self, name: str) -> BuildAxis:
        (found,) = [a for a in self.axes if a.name == name]
        return found

    def axis_values(self, records: Mapping[str, object]) -> dict[str, object]:
        """Its axes' values from what a manifest's build entry records under their names."""
        return {a.name: a.from_record(records[a.name]) for a in self.axes if a.name in records}

    def axis_codes(self, values: Mapping[str, object]) -> dict[str, str]:
        return {a.name: a.code(values[a.name]) for a in self.axes if a.name in values}


#: Every benchmark by id: the built-ins (`ruler.benchmarks.BUILTIN`), then a plug-in's (entry
#: point group `ruler.benchmarks`).
BENCHMARK_SPECS: Registry[Benchmark] = Registry(
    "benchmark", "ruler.benchmarks", accepts=lambda obj: isinstance(obj, Benchmark),
    name_of=lambda b: b.id)
with builtin_code():
    for _id, _address in BUILTIN.items():
        BENCHMARK_SPECS.register_lazy(_id, _address)


def _load_benchmarks() -> None:
    """Load every registered benchmark: each registers its tasks when its module loads."""
    BENCHMARK_SPECS.names()
    for name in BENCHMARK_SPECS.builtin_names():
        BENCHMARK_SPECS.get(name)


ON_MISS.append(_load_benchmarks)


#: Benchmark id -> its tasks, in the benchmark's order.
BENCHMARKS: Mapping[str, tuple[str, ...]] = LiveView(
    lambda: {b.id: b.tasks for b in BENCHMARK_SPECS.values()})

#: What `--benchmark` accepts, mapped to the id.
ALIASES: Mapping[str, str] = LiveView(
    lambda: {name: b.id for b in BENCHMARK_SPECS.values() for name in (*b.aliases, b.id)})


def get_benchmark(benchmark_id: str, package: str | None = None) -> Benchmark:
    """The benchmark of id `benchmark_id`; one not installed is a RulerError naming it and, when
    the record that names it says, the package that provides it (`package`)."""
    try:
        return BENCHMARK_SPECS[benchmark_id]  # a plug-in left out: one line saying why
    except UnknownName:
        where = f" (it comes from package {package}: pip install {package})" if package else ""
        raise RulerError(f"benchmark {benchmark_id!r} is not installed{where}; this ruler has "
                         f"{', '.join(BENCHMARK_SPECS)}") from None


def benchmark_package(benchmark_id: str) -> str | None:
    """The installed distribution a plug-in's benchmark comes from (what a build records, so
    that a reader without it names it); None for a built-in."""
    get_benchmark(benchmark_id)
    return BENCHMARK_SPECS.package_of(benchmark_id)


def recorded_length_rule(recorded: str | None, benchmark: str) -> str:
    """A file's length rule: as its manifest entry records it; a file of a build made before
    files recorded it, its build's recorded benchmark's (`Benchmark.length_rule`)."""
    return recorded or get_benchmark(benchmark).length_rule


def tasks_of(benchmark: str) -> tuple[str, ...]:
    """The tasks a benchmark's configs may hold: its own, the tasks declared of its families
    (`tasks.declared`), and for the default benchmark the tasks a plug-in's family registered
    that no benchmark lists."""
    bench = get_benchmark(benchmark)
    own, families = bench.tasks, set(bench.families)
    listed = {t for b in BENCHMARK_SPECS.values() for t in b.tasks}
    declared = tuple(t for t, spec in TASKS.items() if t not in listed and is_declared(t)
                     and spec.family.name in families)
    if benchmark != DEFAULT:
        return own + declared
    return own + declared + tuple(t for t in TASKS if t not in listed and not is_declared(t))


def benchmark_tasks(benchmark: str,
                    axes: Mapping[str, object] | None = None) -> tuple[str, ...]:
    """A benchmark's tasks, those a build makes unless told otherwise (a value of one of its
    axes may narrow them: `BuildAxis.tasks`); never the tasks declared in this process, which
    a build makes only when it declares them itself."""
    bench, axes = get_benchmark(benchmark), axes or {}
    tasks = tuple(t for t in tasks_of(benchmark) if not is_declared(t))
    for axis in bench.axes:
        if axis.name in axes:
            tasks = axis.tasks(axes[axis.name], tasks)
    return tasks


def benchmark_config(base: str, benchmark: str,
                     axes: Mapping[str, object] | None = None) -> str:
    """The config of `benchmark`'s rows for the tokenizer config `base` (and, for a benchmark
    built along axes, their values' suffixes: `llama-3.1--<suffix>`)."""
    bench, axes = get_benchmark(benchmark), axes or {}
    if bench.axes:
        missing = [a.name for a in bench.axes if a.name not in axes]
        if missing:
            raise ValueError(f"benchmark {benchmark!r} has one config per {missing[0]}: give one")
        return "--".join([base, *(a.config_suffix(axes[a.name]) for a in bench.axes)])
    return f"{base}--{bench.config_suffix}" if bench.config_suffix else base


def check_tasks(benchmark: str, tasks: Iterable[str]) -> None:
    """Refuse a build of `benchmark` holding tasks that are not its own (RulerError)."""
    own = tasks_of(benchmark)
    other = [t for t in tasks if t not in own]
    if other:
        owners = [b for b in BENCHMARK_SPECS.values() if other[0] in b.tasks]
        hint = f": build them with {owners[0].flag}" if owners else ""
        raise RulerError(f"task(s) {', '.join(other)} are not {benchmark!r} tasks{hint} (a "
                         f"config holds one benchmark's rows)")


def benchmark_id(name: str) -> str:
    """The id `--benchmark NAME` means (an id or an alias), or a RulerError."""
    try:
        return ALIASES[name]
    except KeyError:
        raise RulerError(f"unknown benchmark {name!r}; known: "
                         f"{', '.join(ALIASES)}") from None


def benchmark_axes() -> dict[str, BuildAxis]:
    """Every registered benchmark's axes, by name (an axis two benchmarks share is one)."""
    return {a.name: a for b in BENCHMARK_SPECS.values() for a in b.axes}


def task_rank(name: str) -> tuple[int, str]:
    """Sort key of a task name in the benchmarks' order (each benchmark's tasks in its own
    order: upstream's), then the other registered tasks, then the declared ones by name;
    names no one registered come after every task, by name."""
    order = _task_order()
    return order.get(name, len(order)), name


def _task_order() -> dict[str, int]:
    key = (BENCHMARK_SPECS.known_names(), TASKS.known_names())
    if _ORDER.get("key") != key:
        # declared tasks by name: a folder's readers declare them in the manifest's order,
        # its build in the command's
        names = ([t for b in BENCHMARK_SPECS.values() for t in b.tasks]
                 + [t for t in TASKS if not is_declared(t)]
                 + sorted(t for t in TASKS if is_declared(t)))
        _ORDER.update(key=key, order={t: i for i, t in enumerate(dict.fromkeys(names))})
    return _ORDER["order"]


_ORDER: dict[str, Any] = {}


def in_task_order(names: Iterable[str]) -> list[str]:
    """`names` (once each) in the benchmarks' task order, unknown names after, by name: the
    order of every list of tasks ruler shows (card, reports, exports)."""
    return sorted(set(names), key=task_rank)
