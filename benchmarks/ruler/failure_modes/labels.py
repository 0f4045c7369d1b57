"""The failure modes' names, where each comes from, and which one a row is labelled by.

A wrong row (its RULER metric below 1) gets every mode that applies to it as a flag, and one
primary label: the first of its flags in `PRECEDENCE` (`primary`). Sub-flags qualify a mode
(`vicinity` a distractor value, `duplicated` an incomplete answer, ...) and are never a
primary label. Everything here follows `paper-analysis.md` §4 (the operational definitions of
the paper's prose); `Mode.source` says whether a mode is the paper's (named in its Section 5)
or an extension of ours, and the thresholds are ours (`Thresholds`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

#: The label of a right row (score 1 under the task's RULER metric): it has no failure label.
CORRECT = "correct"


@dataclass(frozen=True)
class Mode:
    """One failure mode: its label and whether it is the paper's (named in its Section 5) or
    an extension of ours. The paper's name for each, the families it is looked for in and
    what a row shows: docs/failure-modes.md's table "The labels", in this order."""

    name: str
    source: str  # "paper" or "ours"


#: Every primary label, in precedence order (`paper-analysis.md` §4.5, [ours]): the first of a
#: row's flags in this order is its label. `partial_number` (7-digit values cut short) is
#: placed beside `incomplete_value`, whose number analogue it is ([ours]: §4.5 lists no place).
MODES: tuple[Mode, ...] = (
    Mode("empty", "paper"),
    Mode("format", "ours"),
    Mode("copy_oneshot", "paper"),
    Mode("copy_input_start", "paper"),
    Mode("copy_context", "paper"),
    Mode("no_context_coincidence", "paper"),
    Mode("parametric", "paper"),
    Mode("distractor_value", "paper"),
    Mode("other_chain", "paper"),
    Mode("incomplete_value", "paper"),
    Mode("partial_number", "ours"),
    Mode("incomplete_set", "paper"),
    Mode("incomplete_chain", "ours"),
    Mode("inaccurate_aggregation", "paper"),
    Mode("noise_token", "ours"),
    Mode("hallucinated_value", "ours"),
    Mode("hallucinated_name", "ours"),
    Mode("not_in_context", "paper"),
    Mode("distractor_document", "ours"),
    Mode("key_echo", "ours"),
    Mode("other", "ours"),
)

PRECEDENCE: tuple[str, ...] = tuple(m.name for m in MODES)


@dataclass(frozen=True)
class SubFlag:
    """A flag that qualifies a mode (`of`; "": a fact about the answer), or says something of
    the answer, and never makes a label; its meaning: docs/failure-modes.md's flags table."""

    name: str
    of: str
    source: str


SUB_FLAGS: tuple[SubFlag, ...] = (
    SubFlag("vicinity", "distractor_value", "paper"),
    SubFlag("duplicated", "incomplete_set", "paper"),
    SubFlag("stopword", "parametric", "paper"),
    SubFlag("near_rank", "inaccurate_aggregation", "ours"),
    SubFlag("near", "no_context_coincidence", "ours"),
    SubFlag("at_budget", "", "ours"),
)
SUB_FLAG_NAMES = frozenset(s.name for s in SUB_FLAGS)

#: Function words whose presence among out-of-context items sets `stopword` (§4.4).
STOPWORDS = frozenset({"the", "a", "an", "and", "of", "to", "in", "is", "it", "that", "for",
                       "on", "with", "as", "was", "he", "she", "they"})


@dataclass(frozen=True)
class Thresholds:
    """The numbers the definitions use: all of them ours (§4.4), written into the report."""

    vicinity_needles: int = 5  # W: a distractor this close (in needles) is in the vicinity
    uuid_prefix: int = 8  # characters a truncated UUID shares with the gold, or hex digits
    number_prefix: int = 4  # leading digits a partial number shares with the gold
    # A number cut short is a distractor's when it has this many of its leading digits: with
    # thousands of 7-digit distractors (the needle haystack), 4 digits match one by chance.
    distractor_digits: int = 6
    start_copy_chars: int = 30  # an answer's start copied from the input's beginning
    start_window: int = 500  # ... found within its first characters
    start_list_items: int = 3  # a list's first items copied from the first list
    start_list_positions: int = 20  # ... starting at one of its first positions
    context_copy_chars: int = 50  # a common substring with the input at least this long
    context_copy_share: float = 0.5  # ... and this share of the answer
    echo_chars: int = 30  # ... not counting stretches of this many the task's text holds
    fwe_copy_tokens: int = 5  # consecutive coded words copied from the text
    near_rank: int = 10  # fwe: a wrong word's rank within this is `near_rank`
    near_f1: float = 0.8  # qa: token F1 with the no-context answer for `near`
    oneshot_items: int = 3  # cwe: the first items that run through the example

    def to_json(self) -> dict[str, float]:
        return {k: float(v) if isinstance(v, float) else v for k, v in asdict(self).items()}


THRESHOLDS = Thresholds()

#: The version of these definitions, recorded with the labels (a change of a definition or a
#: threshold is a new version: labels of two versions are not comparable).
DEFINITIONS = "ruler-failure-modes/1"


def primary(flags: Iterable[str]) -> str:
    """The primary label of a wrong row with these flags: the first of them in `PRECEDENCE`
    (`other` when none is a mode)."""
    found = set(flags)
    for name in PRECEDENCE:
        if name in found:
            return name
    return "other"
