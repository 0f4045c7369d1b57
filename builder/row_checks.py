"""The checks a row must pass wherever it is: in the worker that makes it, before its file is
written, and in `ruler verify`, which reads it back. One definition, so no build writes a row
its own verify rejects.

Each check reads the row alone (and the task's catalog entry, the build's variant and its
benchmark's fill promise), none tokenizes: the fields a file's rows share, `length <= L`,
`context + question == input`, the answers readable off the input (the task family's
`check_row`), the variant's own rule, one gold depth per gold position with the positions in
order, and the benchmark's fill (`catalog.benchmarks.FillPromise`). What needs a tokenizer or
the generator's randomness (stored lengths re-counted, gold positions re-derived, rows
rebuilt) stays in verify.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ruler.benchmarks import DEFAULT
from ruler.catalog.base import TaskGenerator
from ruler.catalog.benchmarks import FillPromise, get_benchmark
from ruler.catalog.family import get_family
from ruler.catalog.tasks import TASKS, TaskSpec
from ruler.catalog.variants import NO_VARIANT, Variant

#: What a finding is about: the row's fields (verify's "rows" column) or its answers.
FIELDS, ANSWERS = "fields", "answers"


@dataclass(frozen=True)
class Finding:
    kind: str  # FIELDS or ANSWERS
    message: str
    advice: str = ""  # what a build that made the row can do (a depth sweep's)


#: Whether a short row holds all of its task's inputs: True, False, or why it cannot be told
#: here (verify without the build's sources).
AtBound = Callable[[Mapping[str, Any]], "bool | str"]


@dataclass(frozen=True)
class RowRules:
    """What the rows of one file must be: its config, task and length, the task's catalog
    entry (None: a task this ruler does not know), the build's variant and the fill its
    benchmark promises (None where the variant's rows do not fill their length, or where the
    task's units are documents of any size: `FamilySpec.units_bounded`)."""

    config: str
    task: str
    max_seq_length: int
    spec: TaskSpec | None
    variant: Variant = NO_VARIANT
    fill: FillPromise | None = None

    @classmethod
    def of(cls, config: str, task: str, max_seq_length: int,
           variant: Variant = NO_VARIANT, benchmark: str = DEFAULT) -> "RowRules":
        """The rules of a file of `benchmark`'s build (the recorded one, whose fill its rows
        keep)."""
        spec = TASKS.get(task)
        fill = get_benchmark(benchmark).fill \
            if spec is not None and variant.fills_length and spec.family.units_bounded else None
        return cls(config, task, max_seq_length, spec, variant, fill)

    def expected(self) -> dict[str, Any]:
        """The fields every row of the file has."""
        fields: dict[str, Any] = {"tokenizer": self.config, "task": self.task,
                                  "max_seq_length": self.max_seq_length}
        if self.spec is not None:
            fields.update(tokens_to_generate=self.variant.tokens_to_generate(self.spec),
                          metric=self.spec.metric)
        return fields

    @property
    def keeps_short_rows(self) -> bool:
        """Whether the task keeps a row shorter than L when its inputs run out (a task that
        takes a language's whole dictionary)."""
        if self.spec is None:
            return False
        generator: type[TaskGenerator] = get_family(self.spec.family.name).generator
        return generator.short_at_bound


@dataclass
class RowVerdict:
    """What the checks found in one row."""

    findings: list[Finding] = field(default_factory=list)  # what is wrong with it
    notes: list[str] = field(default_factory=list)  # checks that could not be made, and why
    # short of the fill promise, allowed: it holds all of its task's inputs
    short_at_bound: bool = False
    # its shared fields are not the file's (another task's row, a length over L): nothing
    # else was checked
    foreign: bool = False


def row_findings(rules: RowRules, index: int, row: Mapping[str, Any],
                 check_answers: Callable[[Mapping[str, Any]], str | None],
                 at_bound: AtBound) -> RowVerdict:
    """What is wrong with row `index` of the file `rules` describes.

    `check_answers(row)`: the task family's answer check (`check_row`, or in a worker the
    family's check against the build's own sources); `at_bound(row)`: whether a row short of
    its fill holds all of its task's inputs (asked only then).
    """
    wrong = [f"{k}={row[k]!r} (expected {v!r})"
             for k, v in (*rules.expected().items(), ("index", index)) if row[k] != v]
    if row["length"] > rules.max_seq_length:
        wrong.append(f"length {row['length']} > L = {rules.max_seq_length}")
    if wrong:  # a row of the wrong task would only add confusing answer findings
        return RowVerdict([Finding(FIELDS, "; ".join(wrong))], foreign=True)
    verdict = RowVerdict()
    found = verdict.findings
    if row["context"] + row["question"] != row["input"]:
        found.append(Finding(FIELDS, f"context ({len(row['context'])} chars) + question "
                                     f"({len(row['question'])} chars) != input "
                                     f"({len(row['input'])} chars)"))
    if rules.spec is None:
        return verdict
    try:
        # a variant without the answers in its rows (no context): nothing to recover
        why = check_answers(row) if rules.variant.answers_in_input else None
    except Exception as e:  # a malformed row must be reported, not crash the run
        why = f"answer check failed: {type(e).__name__}: {e}"
    if why:
        found.append(Finding(ANSWERS, f"answer not recoverable: {why}"))
    # the variant's own rule (a depth sweep: row i's gold in bin i mod N)
    miss = rules.variant.row_problem(rules.spec, index, row)
    if miss:
        found.append(Finding(ANSWERS, miss, rules.variant.row_advice))
    gold, depths = row["gold_token_positions"], row["gold_depths"]
    if len(gold) != len(depths) or any(p < 0 for p in gold) or gold != sorted(gold) \
            or any(not (0.0 <= d <= 1.0) or math.isnan(d) for d in depths):
        found.append(Finding(FIELDS, f"gold_token_positions {gold} and gold_depths {depths} "
                                     f"are not one position and one depth in [0, 1] per gold "
                                     f"item, in order"))
    short = rules.fill.problem(row["length"], rules.max_seq_length) if rules.fill else None
    if short:
        held = at_bound(row) if rules.keeps_short_rows else False
        if isinstance(held, str):
            verdict.notes.append(f"fill not checked where it is low ({held})")
        elif held:
            verdict.short_at_bound = True
        else:
            found.append(Finding(FIELDS, short))
    return verdict
