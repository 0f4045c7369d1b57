"""The task catalog: what a task is (`TaskSpec`: a family's constants plus its parameters), and
`TASKS`, every task by name.

Each benchmark declares its own families and tasks in its folder (`ruler.benchmarks.<id>`:
RULER's 13 with upstream's templates, prefixes, budgets and metrics, NVIDIA/RULER
`scripts/data/synthetic/constants.py`; a plug-in's in its own package) and registers them here
(`register_task`); the built-ins are loaded the first time a name is not found or the whole
list is read, a plug-in's through the `ruler.task_families` entry point group, in every
process: the CLI's, and each spawned worker's. A family's code (generator, checks, depth
rules) joins its constants in one object,
`ruler.catalog.family.TaskFamily`, found at the address its `FamilySpec.module` names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ruler.kernel.errors import RulerError
from ruler.kernel.registry import LiveView, Registry


@dataclass(frozen=True)
class FamilySpec:
    """Constants shared by all tasks of one generator family."""

    name: str
    template: str
    answer_prefix: str
    tokens_to_generate: int
    metric: str
    # Where the family's code is (`ruler.catalog.family.TaskFamily`, which holds this
    # spec): "package.module:ATTR", or a module that registers it when imported. Imported the
    # first time the family is asked for, so one family's dependencies never load for
    # another. None: registered by whoever registered its tasks (a plug-in).
    module: str | None = None
    # `params_problem(params)`: why the family's generator cannot build a task with these
    # parameters (one line), or None; `register_task` refuses such a task. None: any.
    params_problem: Callable[[Mapping[str, Any]], str | None] | None = None
    # False: a haystack unit is a source's document, of any size (HotpotQA holds paragraphs of
    # 1,494 llama-3.1 tokens in its first 100 questions), so a row falls short of L by up to
    # one document, as upstream's, and its benchmark's fill promise
    # (`benchmarks.FillPromise`) is not held against it.
    units_bounded: bool = True
    # True: the answer is a list every item of which counts (variables, words): an answer cut
    # at the output budget loses items (the report's health section says so).
    list_answer: bool = False
    # `configure(args)`: the task a user declares with these arguments of the family's
    # generator (`Configured`: its parameters, sources and output budget), checked against
    # each argument's domain (RulerError naming the argument); what a task file's
    # `{task: <family>, args: {...}}` entry becomes (`ruler.catalog.declared`). None:
    # the family takes no declared tasks.
    configure: Callable[[Mapping[str, Any]], "Configured"] | None = None


@dataclass(frozen=True)
class Configured:
    """What a family makes of a declared task's arguments: the `TaskSpec` parameters its
    generator reads (those its own tasks spell out, plus every other argument given a value
    other than its default, so a declaration of one of its tasks is that very task), the
    sources it reads, and its output budget where it is not the family's."""

    params: Mapping[str, Any]
    sources: tuple[str, ...] = ()
    tokens_to_generate: int | None = None


@dataclass(frozen=True)
class TaskSpec:
    """A task: a family plus its parameters."""

    name: str
    family: FamilySpec
    params: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # ids in catalog.sources.SOURCES this task reads
    # The task's own output budget where it is not its family's (a declared task whose
    # answer needs more: `FamilySpec.configure`); None: the family's.
    answer_budget: int | None = None

    @property
    def tokens_to_generate(self) -> int:
        """The tokens a row reserves for the answer: upstream's per-family budget, or the
        task's own (`answer_budget`; a build variant may reserve another: catalog.variants,
        TaskGenerator.tokens_to_generate)."""
        return self.answer_budget or self.family.tokens_to_generate

    @property
    def metric(self) -> str:
        return self.family.metric


#: The entry point group of task-family plug-ins: each entry point names a module that
#: registers its families and tasks when imported, or a function that does when called.
PLUGIN_GROUP = "ruler.task_families"

#: Every task: the built-in benchmarks' (loaded, with their benchmarks, the first time a name
#: is missing or the whole list is read), then a plug-in's, in the order they were registered.
TASKS: Registry[TaskSpec] = Registry("task", PLUGIN_GROUP,
                                     accepts=lambda obj: isinstance(obj, TaskSpec),
                                     name_of=lambda spec: spec.name,
                                     on_miss=lambda: [load() for load in ON_MISS])

#: What loads the tasks a registered benchmark declares (the benchmark registry's loader,
#: `benchmarks`, which the `ruler.catalog` package imports with this module).
ON_MISS: list[Callable[[], object]] = []


def params_problem(spec: TaskSpec) -> str | None:
    """Why `spec`'s family cannot build it (`FamilySpec.params_problem`), or None."""
    check = spec.family.params_problem
    return check(spec.params) if check is not None else None


class _FamilyConstants(LiveView[FamilySpec]):
    """Every task's family constants by family name, read off `TASKS` (their one record)."""

    def __init__(self) -> None:
        super().__init__(self._specs)

    def _specs(self, loaded_only: bool = False) -> dict[str, FamilySpec]:
        tasks = TASKS.loaded_items() if loaded_only else TASKS.items()
        return {spec.family.name: spec.family for _, spec in tasks}

    def known(self, name: str) -> FamilySpec | None:
        """The constants of family `name` among the tasks registered so far (nothing loaded)."""
        return self._specs(loaded_only=True).get(name)


#: The family constants of every task in `TASKS`, by family name.
FAMILIES = _FamilyConstants()

#: A task name is a folder and part of config names (`<tokenizer>--<task>`).
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task to the catalog (registering the same spec again does nothing). Its family's
    code is found at `spec.family.module` or registered apart
    (`ruler.catalog.family.register_family`)."""
    if not _TASK_NAME.fullmatch(spec.name) or "--" in spec.name:
        raise RulerError(f"task name {spec.name!r}: use letters, digits, '_', '.' and single "
                         f"'-' (it names a folder and is part of config names)")
    known = dict(TASKS.loaded_items()).get(spec.name)
    if known is not None and known != spec:
        raise RulerError(f"task {spec.name!r} is in the catalog already (family "
                         f"{known.family.name!r}); a registered task cannot replace it")
    family = FAMILIES.known(spec.family.name)
    if family is not None and family != spec.family:
        raise RulerError(f"task {spec.name!r}: family {spec.family.name!r} is in the catalog "
                         f"already with other constants (template, prefix, budget or metric)")
    problem = params_problem(spec)
    if problem:
        raise RulerError(f"task {spec.name!r}: family {spec.family.name!r} cannot build these "
                         f"parameters: {problem}")
    return TASKS.register(spec)

#: The paper's lengths (4K..128K); any length >= a task's minimum can be built.
PAPER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)

#: Past the paper: 256K, 512K and 1M (`--lengths long`). Every task builds there and beyond
#: (tested to 2M); sources that run out are repeated as upstream does (cards.repeated).
LONG_LENGTHS = (262144, 524288, 1048576)

#: Named length sets for `--lengths` (combinable: `paper,long`), besides those a benchmark
#: names (`Benchmark.length_sets`).
LENGTH_SETS = {"paper": PAPER_LENGTHS, "long": LONG_LENGTHS}


def get_task(name: str) -> TaskSpec:
    """The task `name`, or a RulerError naming the known ones."""
    return TASKS[name]
