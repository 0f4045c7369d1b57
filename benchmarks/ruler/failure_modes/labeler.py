"""One row and one prediction -> no label (right) or a primary label and its flags.

Pure and deterministic: it reads the row as built (`base.LabelRow`: input, references,
answer prefix, metric, the task's family) and the prediction, nothing else. A right row
(score 1 under the task's own RULER metric, as the paper's accuracy counts it) gets no
failure label. A wrong one is looked at by every mode of its family and by the modes every
family shares (the copying modes, the empty answer, the output budget); all that apply are
its flags, and the first of them in `labels.PRECEDENCE` is its label (`paper-analysis.md`
§4.1, §4.4, §4.5).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

from ruler.benchmarks.ruler.failure_modes import cwe, fwe, niah, qa, vt
from ruler.benchmarks.ruler.failure_modes.base import Answer, FamilyLabeler, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.labels import (
    PRECEDENCE,
    SUB_FLAG_NAMES,
    THRESHOLDS,
    primary,
)
from ruler.benchmarks.ruler.failure_modes.text import collapse, mask_echo, shares_substring
from ruler.eval.metrics.specs import postprocess_pred, row_score

#: The labeler of each task family whose rows it reads (RULER v1's five; a family not here,
#: RULERv2's or ONERULER's, is not labelled).
FAMILY_LABELERS: dict[str, FamilyLabeler] = {
    "niah": niah.label,
    "variable_tracking": vt.label,
    "common_words_extraction": cwe.label,
    "freq_words_extraction": fwe.label,
    "qa": qa.label,
}

#: Families whose rows can open with a solved example (copying its start is copying it).
_EXAMPLE_FAMILIES = {"variable_tracking": vt.INSTRUCTION, "common_words_extraction": cwe.BLOCK}

_ORDER = {name: n for n, name in enumerate(PRECEDENCE)}


@dataclass(frozen=True)
class RowLabels:
    """A wrong row's primary label, its flags (modes in precedence order, then sub-flags)
    and the measures some flags come with."""

    label: str
    flags: tuple[str, ...]
    distance: int | None = None
    char_distance: float | None = None
    chance: float | None = None
    rank: int | None = None


def labels_family(family: str) -> bool:
    """Whether rows of this task family are labelled."""
    return family in FAMILY_LABELERS


def label_row(row: LabelRow, prediction: str, finish_reason: str = "",
              score: float | None = None) -> RowLabels | None:
    """The labels of a wrong row; None for a right one. `score`: the row's value under its
    metric where the caller has it (else computed); `finish_reason` "length": the answer was
    cut at the output budget (`at_budget`)."""
    if score is None:
        score = row_score(row.metric, prediction, row.outputs, row.task)
    if score >= 1.0:
        return None
    ans = Answer(postprocess_pred(prediction), score, cut=finish_reason == "length")
    found = Found()
    found.add("empty", _nothing(ans.text, row.answer_prefix))
    if ans.text:
        FAMILY_LABELERS[row.family](row, ans, found)
        _copying(row, ans, found)
    found.add("at_budget", finish_reason == "length")
    modes = {f for f in found.flags if f not in SUB_FLAG_NAMES} or {"other"}
    flags = sorted(modes, key=_ORDER.__getitem__) + sorted(found.flags - modes)
    return RowLabels(label=primary(modes), flags=tuple(flags), distance=found.distance,
                     char_distance=found.char_distance, chance=found.chance, rank=found.rank)


_PUNCT = string.punctuation + string.whitespace


def _nothing(text: str, answer_prefix: str) -> bool:
    """Nothing after cleaning, only punctuation, or only the answer prefix echoed (§4.6)."""
    bare = collapse(text.lower()).strip(_PUNCT)
    return not bare or bare == collapse(answer_prefix.lower()).strip(_PUNCT)


def _copying(row: LabelRow, ans: Answer, found: Found) -> None:
    """The copying modes every family shares (§4.4): the input's start, and a long
    stretch of the input; the input's start is the example's where the row opens with one."""
    t = THRESHOLDS
    head = ans.collapsed[:t.start_copy_chars]
    # A passage, not one value: a needle's UUID near the top is retrieved, not copied ([ours])
    if len(head) >= t.start_copy_chars and " " in head.strip() and head in collapse(
            row.lower[:t.start_window * 2])[:t.start_window]:
        marker = _EXAMPLE_FAMILIES.get(row.family)
        example = marker is not None and row.input.rfind(marker) > 0
        found.add("copy_oneshot" if example else "copy_input_start")
    # A restated answer prefix or question is the task's own text, not the context's.
    body = mask_echo(ans.lower, row.scaffold, t.echo_chars)
    need = max(t.context_copy_chars, math.ceil(t.context_copy_share * len(ans.lower)))
    found.add("copy_context", shares_substring(body, row.lower, need))
