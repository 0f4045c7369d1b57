"""Declared tasks: a task of a family's own generator with the complexity a user asks for.

A user declares tasks in the schema of the generators' own task files (`read_task_file`), or on
one line (`parse_declarations`): docs/complexity.md, "Declaring a task". Each becomes a
`TaskSpec` of that family, made by the family's own `FamilySpec.configure` from the arguments
(checked against their domains there: one line naming the argument), and joins the catalog like
the tasks a benchmark registers. A declaration of a task the catalog has already, with the same
parameters, is that task (a benchmark's own task file declares its own tasks); with other
parameters it is refused.

What a declared task is travels as data: `record(name)` is its entry in that schema (its
effective arguments: `{"task": family, "args": {...}}`), which the build recipe carries to its
workers, each file's build key hashes, and the manifest's build entry records under
`declared_tasks`; every reader of a build folder declares the recorded tasks again from there
(`declare_records`), never from a task's name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping, Union

import yaml

from ruler.catalog.tasks import FAMILIES, TASKS, TaskSpec, register_task
from ruler.kernel.errors import RulerError
from ruler.kernel.json_record import FrozenRecord

#: One argument's value: upstream's generators take each as one word of a command line.
ArgValue = Union[str, int, float, bool]


@dataclass(frozen=True)
class DeclaredTask(FrozenRecord):
    """A declared task's record, the generators' own schema: `{task: <family>, args: {...}}`
    with its effective arguments (and `tokens_to_generate` where its budget is its own)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    task: str
    args: dict[str, ArgValue] = field(default_factory=dict)

#: A task file larger than this is no task file (upstream's holds 13 entries in 2 KB).
MAX_TASK_FILE_BYTES = 1 << 20

#: What a record writes the output budget under (every generator takes it).
BUDGET_ARG = "tokens_to_generate"

#: Declared tasks registered in this process by name: their records (`record`).
_DECLARED: dict[str, DeclaredTask] = {}
#: ... and where each was declared first (a file, a flag, a manifest), for messages.
_ORIGIN: dict[str, str] = {}


@dataclass(frozen=True)
class TaskDeclaration:
    """One declared task, as a task file or the one-line form gives it."""

    name: str
    family: str
    args: Mapping[str, Any]
    where: str = ""  # the file or flag it comes from, for messages

    def declare(self) -> TaskSpec:
        return declare(self.name, self.family, self.args, self.where)


def configurable_families() -> list[str]:
    """The families whose tasks can be declared (those with `FamilySpec.configure`)."""
    return [name for name, spec in FAMILIES.items() if spec.configure is not None]


def make_spec(name: str, family_name: str, args: Mapping[str, Any], where: str = "") -> TaskSpec:
    """The `TaskSpec` a declaration makes (not registered), or a RulerError in one line."""
    at = f"{where}: " if where else ""
    if not isinstance(family_name, str) or family_name not in FAMILIES:
        raise RulerError(f"{at}task {name!r}: unknown task family {family_name!r} (families "
                         f"whose tasks can be declared: {', '.join(configurable_families())})")
    family = FAMILIES[family_name]
    if family.configure is None:
        raise RulerError(f"{at}task {name!r}: family {family_name!r} takes no declared tasks "
                         f"(those that do: {', '.join(configurable_families())})")
    if not isinstance(args, Mapping):
        raise RulerError(f"{at}task {name!r}: `args` must be a mapping of argument to value")
    for key, value in args.items():
        if not isinstance(key, str) or not _scalar(value):
            raise RulerError(f"{at}task {name!r}: argument {key!r} must be a name with one "
                             f"value (a string, number or true/false), got {value!r}")
    try:
        made = family.configure(args)
    except RulerError as e:
        raise RulerError(f"{at}task {name!r} ({family_name}): {e}") from None
    budget = made.tokens_to_generate
    return TaskSpec(name, family, dict(made.params), tuple(made.sources),
                    answer_budget=None if budget in (None, family.tokens_to_generate)
                    else budget)


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def declare(name: str, family_name: str, args: Mapping[str, Any], where: str = "") -> TaskSpec:
    """Register the task a declaration makes and return it: the catalog's own task when it
    has one by that name with the same parameters; a RulerError when it has one with others,
    or when the arguments are outside their domains."""
    spec = make_spec(name, family_name, args, where)
    known = dict(TASKS.items()).get(name)
    if known is not None and known != spec:
        at = f"{where}: " if where else ""
        first = (f"{_ORIGIN.get(name) or 'this command'} declares it as" if is_declared(name)
                 else "the catalog's task is")
        raise RulerError(f"{at}task {name!r} is {_describe(spec)}, but {first} "
                         f"{_describe(known)}: one name is one task (declare the other under "
                         f"another name)")
    if known is None:
        register_task(spec)
        _DECLARED[name] = _record_of(spec)
        _ORIGIN[name] = where
    return spec


def _describe(spec: TaskSpec) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in _record_of(spec).args.items())
    return f"{spec.family.name}({args})"


def _record_of(spec: TaskSpec) -> DeclaredTask:
    args = dict(spec.params)
    if spec.answer_budget is not None:
        args[BUDGET_ARG] = spec.answer_budget
    return DeclaredTask(task=spec.family.name, args=args)


def is_declared(name: str) -> bool:
    """Whether task `name` was declared in this process (not registered by code)."""
    return name in _DECLARED


def declared_names() -> tuple[str, ...]:
    """The tasks declared in this process, in the order they were."""
    return tuple(_DECLARED)


def forget(name: str) -> None:
    """Drop declared task `name` from this process (the catalog and its record): a process
    that reads several folders one after the other (a test session) may declare the same
    name otherwise in each."""
    if _DECLARED.pop(name, None) is not None:
        _ORIGIN.pop(name, None)
        TASKS.unregister(name)


def record(name: str) -> DeclaredTask | None:
    """The declared task's record (the task-file schema), or None for a task registered by
    code."""
    return _DECLARED.get(name)


def records(names: Iterable[str]) -> dict[str, DeclaredTask]:
    """The records of those of `names` that are declared tasks, by name."""
    return {n: r for n in names if (r := record(n)) is not None}


def declare_records(recorded: Mapping[str, DeclaredTask], where: str) -> None:
    """Declare the tasks records hold (a build recipe's) in this process; one the catalog
    has otherwise is one line naming `where`."""
    for name, entry in recorded.items():
        declare(name, entry.task, entry.args, where)


def declare_json(recorded: object, where: str) -> None:
    """Declare the tasks a manifest's `declared_tasks` holds (its JSON, before any record is
    made of it: its files name them); a malformed entry is one line naming `where`."""
    if not isinstance(recorded, Mapping):
        raise RulerError(f"{where}: declared_tasks must be a mapping of task name to "
                         f"{{task, args}}")
    for name, entry in recorded.items():
        declare(name, *_entry(name, entry, where), where)


def _entry(name: Any, entry: Any, where: str) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(name, str):
        raise RulerError(f"{where}: task name {name!r} is not a string")
    if not isinstance(entry, Mapping) or "task" not in entry:
        raise RulerError(f"{where}: task {name!r} must be a mapping with `task` (its family) "
                         f"and `args`, got {entry!r}")
    other = sorted(set(map(str, entry)) - {"task", "args"})
    if other:
        raise RulerError(f"{where}: task {name!r} has {', '.join(other)}: an entry holds "
                         f"`task` and `args` only")
    args = entry.get("args")
    return entry["task"], {} if args is None else args


# --- reading declarations -------------------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last,
    which would silently drop a task or an argument)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False
                    ) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _unique_mapping)


def read_task_file(path: str | Path) -> list[TaskDeclaration]:
    """The tasks a task file declares (`name: {task: <family>, args: {...}}`), in its order;
    a RulerError in one line naming the file for anything else."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_TASK_FILE_BYTES:
            raise RulerError(f"task file {path} holds {size:,} bytes: a task file is a small "
                             f"YAML mapping (at most {MAX_TASK_FILE_BYTES:,} bytes)")
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RulerError(f"task file {path} is not UTF-8 text") from None
    except OSError as e:
        raise RulerError(f"cannot read task file {path}: {e.strerror or e}") from None
    return parse_task_yaml(text, str(path))


def parse_task_yaml(text: str, where: str) -> list[TaskDeclaration]:
    """The tasks a task file's text declares (see `read_task_file`)."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise RulerError(f"task file {where} is not valid YAML{at}: {problem}") from None
    except RecursionError:
        raise RulerError(f"task file {where} is nested too deeply to be a task file") from None
    if not isinstance(data, dict) or not data:
        raise RulerError(f"task file {where} must be a mapping of task name to {{task: "
                         f"<family>, args: {{...}}}}, got {type(data).__name__}")
    where = f"task file {where}"
    return [TaskDeclaration(name, *_entry(name, entry, where), where)
            for name, entry in data.items()]


def parse_declarations(text: str) -> list[TaskDeclaration]:
    """The one-line form: `NAME=FAMILY:ARG=VALUE,ARG=VALUE`, several separated by `;`
    (`niah_k8=niah:type_haystack=essay,num_needle_k=8;vt_h6=variable_tracking:num_hops=6`).
    Values are read as YAML scalars (8, 1.5, true, essay)."""
    where = "--declare"
    out = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        head, _, rest = part.partition(":")
        name, eq, family = (s.strip() for s in head.partition("="))
        if not eq or not name or not family:
            raise RulerError(f"{where} {part!r}: write NAME=FAMILY:ARG=VALUE,ARG=VALUE (tasks "
                             f"separated by ';')")
        args: dict[str, Any] = {}
        for item in (i.strip() for i in rest.split(",") if i.strip()):
            key, eq, value = (s.strip() for s in item.partition("="))
            if not eq or not key:
                raise RulerError(f"{where} {part!r}: argument {item!r} is not ARG=VALUE")
            if key in args:
                raise RulerError(f"{where} {part!r}: argument {key!r} is given twice")
            args[key] = _scalar_text(value, where, part)
        out.append(TaskDeclaration(name, family, args, where))
    if not out:
        raise RulerError(f"{where} {text!r} declares no task")
    return out


def _scalar_text(value: str, where: str, part: str) -> Any:
    try:
        parsed = yaml.safe_load(value) if value else ""
    except yaml.YAMLError:
        parsed = None
    if not _scalar(parsed):
        raise RulerError(f"{where} {part!r}: value {value!r} is not one string, number or "
                         f"true/false")
    return parsed


def declare_all(declarations: Iterable[TaskDeclaration]) -> tuple[str, ...]:
    """Declare each (see `declare`); their names, in order. A name declared twice in one
    command is refused."""
    names: list[str] = []
    for d in declarations:
        if d.name in names:
            raise RulerError(f"{d.where}: task {d.name!r} is declared twice")
        d.declare()
        names.append(d.name)
    return tuple(names)
