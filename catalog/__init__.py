"""The catalog and benchmark API (layer 1 of docs/architecture.md): what a benchmark is declared
with and what its generators are given. The `Benchmark` record and its registry (`benchmarks`),
the task definitions (`tasks`) and what a family registers (`family`: generator, row checks,
depth rules), the generator interface and its helpers (`base`, `placement`, `sampling`,
`tally`, `checks`), the build context (`context`), pinned sources (`sources`, `hub_sources`, the
essays, `words`), variants, the tokenizer interface (`tokenizer`, `chat_template`), the
manifest's build-entry records (`manifest_records`), depths and length rules. It imports the
kernel and the built-ins' table (`ruler.benchmarks`) only; the build's and the evaluator's
machinery import it.

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
