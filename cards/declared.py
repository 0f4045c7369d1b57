"""The card's text on declared tasks (`ruler.builder.tasks.declared`): each one's declaration
in the generators' own schema, as the manifest records it (a task file that builds it again),
and how it differs from the family's own task closest to it, so a reader sees the complexity
asked for beside the standard configuration."""

from __future__ import annotations

from typing import Any, Mapping

import yaml

from ruler.builder.manifest import Manifest
from ruler.builder.markup import md_code
from ruler.builder.tasks.catalog import FAMILIES, TASKS, TaskSpec
from ruler.builder.tasks.declared import BUDGET_ARG, DeclaredTask, is_declared


def recorded_declarations(manifest: Manifest) -> dict[str, DeclaredTask]:
    """Every declared task the folder's builds record, by name (one name is one task in a
    folder: `Manifest.load` refuses two records that differ)."""
    found: dict[str, DeclaredTask] = {}
    for config in manifest.configs():
        found.update(manifest.builds[config].declared_tasks or {})
    return dict(sorted(found.items()))


def _closest(family: str, args: Mapping[str, Any]) -> TaskSpec | None:
    """The family's own task (registered by its benchmark, not declared) whose parameters
    differ from `args` in the fewest arguments; the first in the catalog's order on a tie."""
    own = [spec for name, spec in TASKS.items()
           if spec.family.name == family and not is_declared(name)]
    return min(own, key=lambda s: len(_changes(s, args)), default=None)


def _changes(spec: TaskSpec, args: Mapping[str, Any]) -> list[str]:
    """`arg std -> declared` for each argument (and the budget) that differs."""
    std = {**spec.params, BUDGET_ARG: spec.tokens_to_generate}
    mine = {**args, BUDGET_ARG: args.get(BUDGET_ARG, spec.family.tokens_to_generate)}
    return [f"{k} {std.get(k, 'default')} -> {mine.get(k, 'default')}"
            for k in dict.fromkeys([*std, *mine]) if std.get(k) != mine.get(k)]


def declared_section(manifest: Manifest) -> str:
    """The card's paragraph on the folder's declared tasks ("" when it has none)."""
    recorded = recorded_declarations(manifest)
    if not recorded:
        return ""
    lines = []
    for name, rec in recorded.items():
        std = _closest(rec.task, rec.args) if rec.task in FAMILIES else None
        beside = (f"its family's own task closest to it, {md_code(std.name)}, with "
                  + "; ".join(md_code(c) for c in _changes(std, rec.args))
                  if std is not None else "no task of its family is built in")
        lines.append(f"- {md_code(name)}: {beside}.")
    text = yaml.safe_dump({n: r.to_json() for n, r in recorded.items()}, sort_keys=False)
    return ("\n\nDeclared tasks: tasks of a family's own generator with the complexity the "
            "builder was asked for (`ruler build --task-file` or `--declare`), each argument "
            "checked against its domain. Beside the standard configuration:\n\n"
            + "\n".join(lines) + "\n\nTheir declarations, as `manifest.json` records them "
            "(`declared_tasks` of each build; effective values, defaults filled in): a task "
            "file that builds them again.\n\n```yaml\n" + text + "```")
