"""Row checks a reader can make without the generator's randomness, by the row's task family.

Answer recoverability: can a row's `outputs` be read off its `input` directly? Gold items: the
character offsets in `input` where the row's gold items start and the span of its context,
re-derived from the row (some families also read the generator's data, e.g. which QA documents
are gold). Each family defines both (`ruler.catalog.family.TaskFamily`); task tests and
`ruler verify` call them through here.
"""

from __future__ import annotations

from typing import Any, Mapping

from ruler.catalog.family import GoldSpans, family_of

#: The key of a checked row's mapping that carries its build's recorded axis values (what the
#: manifest's build entry of its config records for its benchmark's axes, by axis name),
#: beside the row's columns, which do not hold them (`with_build`). A row's config name is
#: never read for them.
BUILD_AXES = "build_axes"


def with_build(row: Mapping, axes: Mapping[str, Any] | None) -> Mapping:
    """The row as the family checks read it: its columns, and its build's recorded axis
    values (the manifest entry's records, by axis name) under BUILD_AXES."""
    return {**row, BUILD_AXES: dict(axes)} if axes else row


def check_row(row: Mapping) -> str | None:
    return family_of(row["task"]).check_row(row)


def gold_spans(row: Mapping, generator=None) -> GoldSpans | str:
    """(gold item start offsets, (context start, context end)) in `row["input"]`, or why they
    cannot be found. `generator`: the row's task generator, for families that need its data."""
    return family_of(row["task"]).gold_spans(row, generator)


def needs_generator(task: str) -> bool:
    """Whether `gold_spans` of this task's rows needs the generator (its sources)."""
    return family_of(task).needs_generator
