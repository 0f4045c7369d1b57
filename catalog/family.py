"""A task family as one registered unit: its constants, generator, row checks and depth rules.

A `TaskFamily` joins the family's upstream constants (its `FamilySpec`: template, answer
prefix, budget, metric, which its tasks in the catalog share) with its code; the builder,
`ruler verify` and the evaluator ask the family instead of branching on its name. Each family
module (in its benchmark's folder, or a plug-in's)
defines its `TaskFamily`, found at the address its `FamilySpec.module` names and imported on
first use (`FAMILY_CODE`, a `ruler.kernel.registry.Registry`), so one family's dependencies
never load for another; a plug-in registers its family (`register_family`) and tasks
(`catalog.register_task`) from the module or function its `ruler.task_families` entry point
names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from ruler.catalog.depths import DepthBin
from ruler.catalog.tasks import FAMILIES, TASKS, FamilySpec, TaskSpec, get_task
from ruler.kernel.errors import RulerError
from ruler.kernel.registry import Registry, UnknownName

#: (character offsets in `input` where the gold items start, (context start, context end)).
GoldSpans = tuple[list[int], tuple[int, int]]


class DepthItem(NamedTuple):
    """One gold item of a row as the evaluator scores it by depth: where it sits (0 = start of
    the context, 1 = its end) and the references a prediction is scored against there, with
    the row's metric."""

    depth: float
    references: tuple[str, ...]


def each_depth(depths: Sequence[float]) -> list[float]:
    """Every gold item is placed in the bin on its own."""
    return list(depths)


def describe_depths(placed: Sequence[float]) -> str:
    return f"gold depths {[round(d, 4) for d in placed]}"


def first_gold_item(row: Mapping[str, Any]) -> list[DepthItem]:
    """One item at the first gold item's depth, scored on all the row's outputs (an answer
    found as a whole, such as a variable chain followed from its first line); none for a row
    without gold positions."""
    depths = row.get("gold_depths") or ()
    return [DepthItem(min(depths), tuple(row["outputs"]))] if depths else []


def no_depth_columns(spec: TaskSpec) -> tuple[str, ...]:
    return ()


def question_after_context(text: str, context_span: tuple[int, int]) -> int:
    """Where a row's `question` starts in its `input`: at the template's text that follows the
    context (upstream's templates all put the query there), past the newlines that end the
    context's last line. The instruction before the context, and a solved example before
    that (where the task has one), stay in `context`: they hold no part of this sample's query, so a
    query-agnostic compressor may see them. The cut is a clean junction ("...\\n" | "What"),
    where the builder already cuts its pieces (`base.end_with_tail`), so the two parts
    tokenized apart give the tokens of the whole."""
    end = context_span[1]
    return end + len(text[end:]) - len(text[end:].lstrip("\n"))


@dataclass(frozen=True)
class TaskFamily:
    """What the builder, `ruler verify` and the evaluator need of a family.

    Attributes:
        spec: the family's constants (`catalog.FamilySpec`), the very object its tasks'
            `TaskSpec.family` holds; `name`, `template`, `answer_prefix`,
            `tokens_to_generate` and `metric` read it.
        generator: the `TaskGenerator` class, made as `generator(spec, ctx, max_seq_length)`.
        check_row: `check_row(row)`: None when the row's `outputs` can be read off its
            `input` (answer recoverability), else what is wrong.
        gold_spans: `gold_spans(row, generator)`: the gold items' start offsets and the
            context's span in `row["input"]`, re-derived from the row (`GoldSpans`), or why
            they cannot be; `generator` is the row's task generator when `needs_generator`,
            else None.
        needs_generator: `gold_spans` reads the generator's data (its sources), e.g. which
            documents hold a QA answer.
        sweepable: the generator places its gold items in a depth bin when the build is
            depth-swept (`ruler build --depths N`, `TaskGenerator.depth_bin`).
        placed_depths: of a row's recorded `gold_depths`, the depths a swept build puts in
            the sample's bin (every gold item's, by default).
        describe_placed: those depths in a message.
        depth_items: `depth_items(row)`: the row's gold items as the evaluator scores them by
            depth (`DepthItem`); the score itself is the evaluator's (the row's metric).
        depth_columns: `depth_columns(spec)`: the columns `depth_items` reads of a row of
            task `spec` beyond task, metric, outputs and gold_depths.
        depth_group: the group of tasks the depth report also averages this family's tasks
            into (its "all niah" heatmap), or None.
        question_start: `question_start(input, context_span)`: where the row's `question`
            starts in `input`, given the context's character span (`Draft.context_span`, or
            re-derived by `gold_spans`); `context` is everything before it. The default,
            `question_after_context`, suits templates that end with the query after the
            context; the cut should be a clean junction (see builder.counting).
        check_built_row: `check_built_row(row, generator)`: `check_row` for a row its build
            has just made, reading what `check_row` finds on its own (a language's prompt
            files) from the generator instead (the build's sources, which `--sources` may
            have put where `check_row` does not look); None: `check_row`.
    """

    spec: FamilySpec
    # a ruler.catalog.base.TaskGenerator class (not imported here: base imports this
    # module, and a type-only import would close that cycle)
    generator: type
    check_row: Callable[[Mapping[str, Any]], str | None]
    gold_spans: Callable[[Mapping[str, Any], Any], GoldSpans | str]
    needs_generator: bool = False
    sweepable: bool = False
    placed_depths: Callable[[Sequence[float]], list[float]] = each_depth
    describe_placed: Callable[[Sequence[float]], str] = describe_depths
    depth_items: Callable[[Mapping[str, Any]], list[DepthItem]] = first_gold_item
    depth_columns: Callable[[TaskSpec], tuple[str, ...]] = no_depth_columns
    depth_group: str | None = None
    question_start: Callable[[str, tuple[int, int]], int] = question_after_context
    check_built_row: Callable[[Mapping[str, Any], Any], str | None] | None = None

    def check_made_row(self, row: Mapping[str, Any], generator: Any) -> str | None:
        """`check_row` of a row the build's `generator` has just made (`check_built_row`)."""
        if self.check_built_row is not None:
            return self.check_built_row(row, generator)
        return self.check_row(row)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def template(self) -> str:
        return self.spec.template

    @property
    def answer_prefix(self) -> str:
        return self.spec.answer_prefix

    @property
    def tokens_to_generate(self) -> int:
        return self.spec.tokens_to_generate

    @property
    def metric(self) -> str:
        return self.spec.metric

    def split_prompt(self, text: str, context_span: tuple[int, int]) -> tuple[str, str]:
        """(`context`, `question`) of a row's `input`: `context + question == input`, the cut
        where `question_start` puts it (never inside the context itself)."""
        cut = self.question_start(text, context_span)
        if not context_span[1] <= cut <= len(text):
            raise ValueError(f"task family {self.name!r}: the question starts at character "
                             f"{cut}, inside the context (which ends at {context_span[1]}) or "
                             f"past the end of the input ({len(text)})")
        return text[:cut], text[cut:]

    def bin_miss(self, depths: Sequence[float], bin: DepthBin) -> str | None:
        """None when a row's placed depths (from its recorded `depths`) lie in `bin`, else
        what is wrong (for the build's and `ruler verify`'s messages)."""
        placed = self.placed_depths(depths)
        if placed and all(bin.contains(d) for d in placed):
            return None
        return (f"{self.describe_placed(placed)} not in depth bin {bin.index} of {bin.bins} "
                f"[{bin.lo:g}, {bin.hi:g})")


def _same_family(a: TaskFamily, b: TaskFamily) -> bool:
    return a is b or a == b


#: Every family's code by name: at the addresses the catalog's specs name (imported on first
#: use: `get_family`), or registered by the module or function a plug-in's
#: `ruler.task_families` entry point names (the catalog's `TASKS` reads those entry points:
#: they register tasks too).
FAMILY_CODE: Registry[TaskFamily] = Registry(
    "task family", accepts=lambda obj: isinstance(obj, TaskFamily),
    name_of=lambda family: family.name, same=_same_family, on_miss=lambda: _by_address())


def _by_address() -> None:
    """Every built-in task's family, registered at the address its spec names (loaded on first
    use; a plug-in's: by `get_family`, or by the plug-in)."""
    for spec in [t.family for n, t in TASKS.items() if not TASKS.from_plugin(n)]:
        if spec.module and spec.name not in FAMILY_CODE.known_names():
            FAMILY_CODE.register_lazy(spec.name, spec.module, origin=f"task family {spec.name}")


def register_family(family: TaskFamily) -> TaskFamily:
    """Register a family's code (registering the same family again does nothing); its tasks
    join the catalog with `catalog.register_task`."""
    if not isinstance(family, TaskFamily):
        raise TypeError(f"{family!r} is not a TaskFamily")
    known = FAMILY_CODE.loaded_items()
    other = dict(known).get(family.name)
    if other is not None and not _same_family(other, family):
        raise RulerError(f"task family {family.name!r} is registered already (generator "
                         f"{other.generator.__module__}.{other.generator.__qualname__})")
    constants = FAMILIES.known(family.name)
    if constants is not None and constants != family.spec:
        raise RulerError(f"task family {family.name!r}: its tasks in the catalog have other "
                         f"constants (template, prefix, budget or metric) than its spec")
    return FAMILY_CODE.register(family)


def get_family(name: str) -> TaskFamily:
    """The family `name`, its module imported first if it has not been yet."""
    if name not in FAMILY_CODE.known_names():
        spec = FAMILIES.get(name)  # a name not in the catalog loads the plug-ins first
        if spec is not None and spec.module:
            FAMILY_CODE.register_lazy(name, spec.module, origin=f"task family {name}'s spec")
    try:
        return FAMILY_CODE[name]
    except UnknownName:
        raise RulerError(f"no code is registered for task family {name!r} (registered: "
                         f"{', '.join(FAMILY_CODE.known_names()) or 'none'}); its module must "
                         f"call ruler.catalog.family.register_family") from None


def family_of(task: str) -> TaskFamily:
    """The family of catalog task `task`."""
    return get_family(get_task(task).family.name)


def swept_tasks(tasks: Iterable[str] | None = None) -> tuple[str, ...]:
    """Those of `tasks` a depth-swept build can hold (their family is sweepable): what `ruler
    build --depths N` builds of a benchmark's tasks unless told otherwise; of the default
    benchmark's by default."""
    if tasks is None:
        from ruler.benchmarks import DEFAULT
        from ruler.catalog.benchmarks import tasks_of

        tasks = tasks_of(DEFAULT)
    return tuple(t for t in tasks if family_of(t).sweepable)
