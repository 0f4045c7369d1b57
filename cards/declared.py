"""The card's text on declared tasks (`ruler.catalog.declared`): each one's declaration
in the generators' own schema, as the manifest records it (a task file that builds it again),
and how it differs from the family's own task closest to it, so a reader sees the complexity
asked for beside the standard configuration."""

from __future__ import annotations

from typing import Any, Mapping

import yaml

from ruler.builder.manifest import Manifest
from ruler.catalog.declared import BUDGET_ARG, DeclaredTask, is_declared
from ruler.catalog.suites import Suite, benchmark_suites
from ruler.catalog.tasks import FAMILIES, TASKS, TaskSpec
from ruler.kernel.markup import md_code, md_text


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


def recorded_suites(manifest: Manifest) -> list[tuple[str, Suite | None]]:
    """Every suite the folder's builds record (`suites`), by name, with its definition from
    the benchmark that offers it (None: a suite this version does not know)."""
    found: dict[str, Suite | None] = {}
    for config in manifest.configs():
        build = manifest.builds[config]
        for name in build.suites or ():
            found.setdefault(name, benchmark_suites(build.spec()).get(name))
    return sorted(found.items())


def suites_section(manifest: Manifest) -> str:
    """The card's paragraph on the suites built into the folder ("" when none): each one's
    configurations, what its source calls them and where their values come from."""
    suites = recorded_suites(manifest)
    if not suites:
        return ""
    built = {f.task for f in manifest.files.values()}
    parts = ["\n\nSuites (`ruler build --suite NAME`): named, frozen sets of configurations. "
             "Sources: [paper] the paper's text or tables, [figure] a figure's legend, "
             "[inferred] our reading of what the paper does not state, [ours] a choice the "
             "paper does not make."]
    for name, suite in suites:
        if suite is None:
            parts.append(f"\n\n{md_code(name)}: a suite this version of the builder does not "
                         f"know (built by another version).")
            continue
        rows = []
        for t in suite.tasks:
            config = (", ".join(f"{k}={v}" for k, v in t.args.items()) if t.declared
                      else "the standard task")
            rows.append("| " + " | ".join([md_code(t.name), md_text(t.label), t.source,
                                          md_text(config), md_text(t.note) or "—",
                                          "yes" if t.name in built else "no"]) + " |")
        # the suite's own text (the benchmark's, Markdown already), not a user's string
        note = f" {suite.note[:1].upper()}{suite.note[1:]}." if suite.note else ""
        parts.append(f"\n\n{md_code(name)}: {md_text(suite.title)}.{note}\n\n"
                     "| task | label | source | configuration | note | in this repo |\n"
                     "|---|---|---|---|---|---|\n" + "\n".join(rows))
    return "".join(parts)
