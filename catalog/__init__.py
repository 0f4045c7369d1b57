"""The catalog and benchmark API (layer 1; docs/architecture.md lists its modules): what a
benchmark is declared with and what its generators are given. It imports the kernel and the
built-ins' table (`ruler.benchmarks`) only; the build's and the evaluator's machinery import it.

Task generators by family: `make_generator`. Importing any module here loads `benchmarks`, the
catalog's loader of its tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ruler.catalog import benchmarks  # noqa: F401 (the catalog's loader of its tasks)
from ruler.catalog.base import Draft, TaskGenerator
from ruler.catalog.family import get_family
from ruler.catalog.tasks import TASKS, TaskSpec, get_task

if TYPE_CHECKING:
    from ruler.catalog.context import BuildContext


def make_generator(spec: TaskSpec, ctx: "BuildContext", max_seq_length: int) -> TaskGenerator:
    return get_family(spec.family.name).generator(spec, ctx, max_seq_length)


__all__ = ["Draft", "TaskGenerator", "TASKS", "TaskSpec", "get_task", "make_generator"]
