"""Suites: named, frozen sets of a benchmark's task configurations (a paper's figure panels, a
study's configurations), each built with one command (`ruler build --suite NAME`).

A suite lists its configurations: the benchmark's own tasks by name, and declared tasks
(`catalog.declared`) with their family and arguments; each with the label its source
gives it (a figure's legend), where its values come from (`source`: what the paper states, a
figure legend, an inference: the benchmark's own tags) and a note. A benchmark offers its
suites at the address `Benchmark.suites` names (a mapping of name to `Suite`). A build made
with `--suite` records the suite's name in its manifest entry (`suites`); the card lists each
recorded suite's configurations from there.

A suite's standard tasks are the benchmark's own (same name, same parameters): their rows are
the default config's rows of that task, length and sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ruler.catalog.declared import ArgValue, TaskDeclaration
from ruler.kernel.errors import RulerError


@dataclass(frozen=True)
class SuiteTask:
    """One configuration of a suite.

    Attributes:
        name: the task's name (the benchmark's own task, or the declared task's).
        label: what its source calls it (a legend: "#K=8").
        source: where its values come from (the benchmark's tags: "[paper]", "[figure]").
        family: the declared task's family; None for one of the benchmark's own tasks.
        args: the declared task's arguments.
        note: anything a reader needs (what is inferred, what differs from the source).
    """

    name: str
    label: str
    source: str
    family: str | None = None
    args: Mapping[str, ArgValue] = field(default_factory=dict)
    note: str = ""

    @property
    def declared(self) -> bool:
        return self.family is not None


@dataclass(frozen=True)
class Suite:
    """A named, frozen set of configurations (`SuiteTask`), in the order its source shows
    them; `title` says what it reproduces, `note` what else it takes (another command).

    `panels`: for a suite gathering other suites (a section's figures), those suites, each
    drawn as its own panel by `ruler report`; () for a suite that is one panel itself.
    `shares`: failure labels whose share of the answered rows its figures draw by length
    besides the score (a paper's statistic on why rows fail, e.g. copying); () for none."""

    name: str
    title: str
    tasks: tuple[SuiteTask, ...]
    note: str = ""
    panels: tuple["Suite", ...] = ()
    shares: tuple[str, ...] = ()

    @property
    def drawn_panels(self) -> tuple["Suite", ...]:
        """The panels `ruler report` draws for it: its `panels`, else itself."""
        return self.panels or (self,)

    @property
    def task_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.name for t in self.tasks))

    def declarations(self) -> list[TaskDeclaration]:
        """Its declared tasks, to declare before a build (each once)."""
        seen: dict[str, TaskDeclaration] = {}
        for t in self.tasks:
            if t.family is not None and t.name not in seen:
                seen[t.name] = TaskDeclaration(t.name, t.family, t.args, f"suite {self.name}")
        return list(seen.values())


def benchmark_suites(benchmark: object) -> Mapping[str, Suite]:
    """The suites a benchmark offers (its `suites` hook), by name; {} for none."""
    found = benchmark.hook("suites") if hasattr(benchmark, "hook") else None
    return found or {}


def find_suite(benchmark: object, name: str) -> Suite:
    """Suite `name` of `benchmark`, or a RulerError naming those it has."""
    suites = benchmark_suites(benchmark)
    if name not in suites:
        title = getattr(benchmark, "title", "")
        raise RulerError(f"--suite {name}: {title} has no such suite (its suites: "
                         f"{', '.join(suites) or 'none'})")
    return suites[name]
