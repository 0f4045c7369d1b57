"""What every family's labeler is given and fills in: the row as built, the answer, and the
flags found with their measures."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from ruler.benchmarks.ruler.failure_modes.text import collapse


@dataclass(frozen=True)
class LabelRow:
    """What the labeler reads of a row: its task and family (the catalog's record of the
    task), its text as built (`input`, no chat wrapper; `answer_prefix`), its references and
    metric. Every parameter of the task (keys, values, queries, needle types, chains, hops,
    the example, the word count) is read off this text and these references, so a task
    configured otherwise than the 13 standard ones is read the same way."""

    task: str
    family: str
    input: str
    outputs: tuple[str, ...]
    answer_prefix: str
    metric: str
    question: str = ""  # the row's `question` (the input's tail after the context)

    @cached_property
    def lower(self) -> str:
        return self.input.lower()

    @cached_property
    def scaffold(self) -> str:
        """The task's own words an answer may restate (lower case): its answer prefix and
        its question."""
        return f"{self.answer_prefix}\n{self.question}".lower()


@dataclass(frozen=True)
class Answer:
    """A prediction as the labeler reads it: `text` after upstream's cleaning (strip, control
    characters to newlines, strip), its lower case, and the row's score on it (0..1)."""

    text: str
    score: float
    cut: bool = False  # ended at the output budget (finish reason "length"): maybe mid-item

    @cached_property
    def lower(self) -> str:
        return self.text.lower()

    @cached_property
    def collapsed(self) -> str:
        return collapse(self.lower)


@dataclass
class Found:
    """The flags a wrong row gets, and the measures some of them come with."""

    flags: set[str] = field(default_factory=set)
    distance: int | None = None  # distractor_value: needles between it and the target
    char_distance: float | None = None  # ... characters between them / len(input)
    chance: float | None = None  # ... the vicinity rate of a uniformly picked distractor
    rank: int | None = None  # fwe: frequency rank of the best wrong coded word

    def add(self, name: str, when: bool = True) -> None:
        if when:
            self.flags.add(name)


#: A family's labeler: adds the flags of its modes for a wrong row.
FamilyLabeler = Callable[[LabelRow, Answer, Found], None]
