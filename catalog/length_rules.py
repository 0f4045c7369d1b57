"""How a row's `length` is counted against its split's L: the length rule, recorded per file.

Rows of most benchmarks count the prompt as the model reads it (chat template, or BOS +
text) plus the answer's budget, `tokens_to_generate`, and the sum is at most L: a model served
with a context of L never truncates. A benchmark made for reasoning models may count the
prompt alone, at most L, its tokens to generate on top (NeMo-Skills fills L with the
prompt).

A benchmark declares its rule (`Benchmark.length_rule`); the build writes it into each
file's manifest entry (`FileEntry.length_rule`; the config's entry lists its files'
rules); everything that says how lengths are counted (the build's summary, the card) reads it
from there, never assumes one. A manifest written before files recorded their rule says
nothing of it: "not recorded".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

#: The rule ids a manifest records.
PROMPT_AND_OUTPUT = "prompt+tokens_to_generate"
PROMPT_ONLY = "prompt"


@dataclass(frozen=True)
class LengthRule:
    id: str
    #: What `length` is, completing "length = ...".
    length: str
    #: The context a model needs for a row of L.
    context: str


RULES = {
    PROMPT_AND_OUTPUT: LengthRule(PROMPT_AND_OUTPUT,
                                  "its prompt's tokens + tokens_to_generate <= L",
                                  "L (the answer's budget is inside it)"),
    PROMPT_ONLY: LengthRule(PROMPT_ONLY,
                            "its prompt's tokens <= L (tokens_to_generate on top)",
                            "L + tokens_to_generate (the answer comes on top)"),
}


def counted_output(rule: str, tokens_to_generate: int) -> int:
    """The part of `tokens_to_generate` a row's `length` counts under `rule`: all of it where
    L holds the prompt and the answer, none where L bounds the prompt alone."""
    return 0 if rule == PROMPT_ONLY else tokens_to_generate


def length_text(rule: str | None) -> str:
    """"its prompt's tokens + tokens_to_generate <= L" for a recorded rule; what is known of
    an unknown or unrecorded one."""
    if rule is None:
        return "a count this manifest does not record"
    known = RULES.get(rule)
    return known.length if known else f"{rule!r} (a rule this version does not know)"


def context_text(rule: str | None) -> str:
    """The context a model needs for a row of L under `rule`."""
    known = RULES.get(rule) if rule else None
    return known.context if known else "not known (the length rule is not recorded)"


def fill_definition(rule: str | None) -> str:
    """What `ruler build`'s "fill" is, under the files' rule."""
    return (f"fill: a row's length / L, the share of the length L it uses, where length = "
            f"{length_text(rule)}; mean and smallest over the file's rows")


def rules_of(recorded: Iterable[str | None]) -> list[str | None]:
    """The distinct rules of several files, in a stable order (unrecorded last)."""
    found = set(recorded)
    return sorted((r for r in found if r is not None)) + ([None] if None in found else [])
