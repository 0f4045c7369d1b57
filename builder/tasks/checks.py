"""Row checks a reader can make without the generator's randomness.

Answer recoverability: can a row's `outputs` be read off its `input` directly? Each family
module defines `check_row(row: Mapping) -> str | None` (None when the answer is recoverable,
else what is wrong). Gold items: each family module defines `gold_spans(row, generator)`, the
character offsets in `input` where the row's gold items start and the span of its context,
re-derived from the row (qa also reads which documents are gold from the generator's data).
Task tests and `ruler verify` call both through here.
"""

from __future__ import annotations

import importlib
from typing import Mapping

from ruler.builder.tasks import GENERATORS
from ruler.builder.tasks.catalog import get_task


def check_row(row: Mapping) -> str | None:
    spec = get_task(row["task"])
    module = GENERATORS[spec.family.name].split(":")[0]
    return importlib.import_module(module).check_row(row)


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """(gold item start offsets, (context start, context end)) in `row["input"]`, or why they
    cannot be found. `generator`: the row's task generator, for families that need its data."""
    spec = get_task(row["task"])
    module = GENERATORS[spec.family.name].split(":")[0]
    return importlib.import_module(module).gold_spans(row, generator)


def needs_generator(task: str) -> bool:
    """Whether `gold_spans` of this task's rows needs the generator (its sources)."""
    return get_task(task).family.name == "qa"
