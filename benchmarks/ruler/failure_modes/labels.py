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
    """One failure mode: its label, the paper's name for it (or ours), the families it is
    looked for in, whether the label is the paper's or ours, and what it means."""

    name: str
    title: str
    source: str  # "paper" (named in the paper's Section 5) or "ours" (an extension)
    families: str
    meaning: str


#: Every primary label, in precedence order (`paper-analysis.md` §4.5, [ours]): the first of a
#: row's flags in this order is its label. `partial_number` (7-digit values cut short) is
#: placed beside `incomplete_value`, whose number analogue it is ([ours]: §4.5 lists no place).
MODES: tuple[Mode, ...] = (
    Mode("empty", "Unreliable tracking: empty answer", "paper", "all",
         "nothing left after upstream's cleaning, only the answer prefix echoed, or no item of "
         "the task's kind (no value-shaped span, no variable name, no word, no QA answer)"),
    Mode("format", "Gold value in another format", "ours", "niah",
         "a gold value is there once separators, spaces and case are removed (1,234,567), "
         "but not as the metric's substring"),
    Mode("copy_oneshot", "Copying the one-shot example", "paper", "vt, cwe",
         "vt: the example's names at least as many as the asked chain's, or its answer "
         "repeated in order; cwe: the first items run in order through the example's list or "
         "answer, or half the items are words only the example has; any family: the answer "
         "copies the input's start and the input starts with the example"),
    Mode("copy_input_start", "Copying the input's start", "paper", "all (cwe without example)",
         "the answer begins with 30+ characters from the input's first 500, or (lists) its "
         "first 3 items run through the first list from one of its first 20 positions"),
    Mode("copy_context", "Copying from the context", "paper", "fwe; all as a fallback",
         "fwe: 5+ consecutive coded words of the text; any family: a common substring with "
         "the input of 50+ characters and half the answer"),
    Mode("no_context_coincidence", "QA answer equal to the no-context answer", "paper", "qa",
         "the answer (SQuAD-normalised, non-empty) equals the same model's answer to the same "
         "row without its documents (`ruler report --no-context`)"),
    Mode("parametric", "Aggregating with parametric knowledge", "paper", "cwe, fwe",
         "half the items or more are words that are in no list of the input"),
    Mode("distractor_value", "Value of a distractor needle", "paper", "niah",
         "the answer holds the value of a needle whose key was not asked for"),
    Mode("other_chain", "Variable of another chain", "paper", "vt (several chains)",
         "the answer names a variable of a chain other than the one asked about"),
    Mode("incomplete_value", "Incomplete UUID", "paper", "niah (uuid values)",
         "a gold UUID is not there in full, but a span sharing 8+ leading characters (or 8+ "
         "hex digits in a row) with it is"),
    Mode("partial_number", "Partial number", "ours", "niah (number values)",
         "a gold number is not there in full, but a number sharing its first 4+ digits is"),
    Mode("incomplete_set", "Incomplete set of values", "paper", "niah (several values)",
         "some but not all gold values (0 < score < 1)"),
    Mode("incomplete_chain", "Incomplete chain", "ours", "vt",
         "only names of the asked chain, but not all of them (0 < score < 1)"),
    Mode("inaccurate_aggregation", "Inaccurate aggregation", "paper", "cwe, fwe",
         "cwe: half the items or more are listed words that are not the most common, or "
         "some gold words with only such words beside them; fwe: a coded word that is not "
         "among the three most frequent (its frequency rank recorded)"),
    Mode("noise_token", "The noise token", "ours", "fwe",
         "the dots, the most frequent 'word' of the coded text, answered"),
    Mode("hallucinated_value", "Value not in the context", "ours", "niah",
         "value-shaped spans, none of them a needle's value or key"),
    Mode("hallucinated_name", "Variable not in the context", "ours", "vt",
         "5-letter capitalised names that are no variable of the input"),
    Mode("not_in_context", "QA answer not in the context", "paper", "qa",
         "the normalised answer is not in the normalised documents"),
    Mode("distractor_document", "QA answer from a distractor document", "ours", "qa",
         "the normalised answer occurs only in documents that hold no reference"),
    Mode("key_echo", "The key echoed", "ours", "niah",
         "a needle's key and no needle value"),
    Mode("other", "Other", "ours", "all", "wrong, and no mode above applies"),
)

PRECEDENCE: tuple[str, ...] = tuple(m.name for m in MODES)


@dataclass(frozen=True)
class SubFlag:
    name: str
    of: str  # the mode it qualifies ("" : a fact about the answer)
    source: str
    meaning: str


#: Flags that qualify a mode (or say something of the answer) and never make a label.
SUB_FLAGS: tuple[SubFlag, ...] = (
    SubFlag("vicinity", "distractor_value", "paper",
            "the distractor found is within 5 needles of the target (its distance recorded)"),
    SubFlag("duplicated", "incomplete_set", "paper",
            "a value, name or word occurs twice or more in the answer"),
    SubFlag("stopword", "parametric", "paper",
            "an out-of-context item is a function word (the, a, an, ...)"),
    SubFlag("near_rank", "inaccurate_aggregation", "ours",
            "fwe: the best wrong coded word is within the 10 most frequent"),
    SubFlag("near", "no_context_coincidence", "ours",
            "not equal to the no-context answer, but a token F1 of 0.8 or more with it"),
    SubFlag("at_budget", "", "ours",
            "generation stopped at the row's output budget (finish_reason 'length')"),
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
