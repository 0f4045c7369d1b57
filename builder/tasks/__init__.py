"""Task generators by family; see `catalog` for the task definitions and `family` for what a
family registers (generator, row checks, depth rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ruler.builder.tasks import benchmarks  # noqa: F401 (the catalog's loader of its tasks)
from ruler.builder.tasks.base import Draft, TaskGenerator
from ruler.builder.tasks.catalog import TASKS, TaskSpec, get_task
from ruler.builder.tasks.family import get_family

if TYPE_CHECKING:
    from ruler.builder.context import BuildContext


def make_generator(spec: TaskSpec, ctx: "BuildContext", max_seq_length: int) -> TaskGenerator:
    return get_family(spec.family.name).generator(spec, ctx, max_seq_length)


__all__ = ["Draft", "TaskGenerator", "TASKS", "TaskSpec", "get_task", "make_generator"]
