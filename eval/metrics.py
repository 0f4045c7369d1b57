"""RULER's metrics and prediction post-processing, exactly as upstream computes them.

Upstream: NVIDIA/RULER `scripts/eval/synthetic/constants.py` (metrics, unchanged since the
first commit) and `scripts/eval/evaluate.py:postprocess_pred`. The two aggregate functions
below are upstream's code verbatim, including its quirks: matching is a case-insensitive
substring test with no word boundaries ('art' matches 'party'), and a reference listed twice
counts twice in `string_match_all`'s recall. The per-row forms give the same numbers and let
reports count, drop or inspect single rows.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess_pred(predict_str: str) -> str:
    """Upstream's only normalisation: strip, control characters to newlines, strip."""
    predict_str = predict_str.strip()
    # Remove all non-printable characters
    predict_str = _CONTROL.sub("\n", predict_str).strip()
    return predict_str


# --- upstream, verbatim ---------------------------------------------------------------------

def string_match_part(preds, refs):
    score = sum([max([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: E501
    return round(score, 2)


def string_match_all(preds, refs):
    score = sum([sum([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) / len(ref) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: E501
    return round(score, 2)


# --- per row ------------------------------------------------------------------------------

def row_match_part(pred: str, refs: Sequence[str]) -> float:
    """1.0 if any reference is a substring of the prediction (case-insensitive), else 0.0."""
    return max(1.0 if r.lower() in pred.lower() else 0.0 for r in refs)


def row_match_all(pred: str, refs: Sequence[str]) -> float:
    """The fraction of references found in the prediction (duplicates count each time)."""
    return sum(1.0 if r.lower() in pred.lower() else 0.0 for r in refs) / len(refs)


#: Aggregate metric (0..100, rounded to 2 decimals) by the name the data's `metric` column holds.
METRICS: Mapping[str, Callable[[Sequence[str], Sequence[Sequence[str]]], float]] = {
    "string_match_all": string_match_all,
    "string_match_part": string_match_part,
}

#: Per-row metric (0..1) by the same names.
ROW_METRICS: Mapping[str, Callable[[str, Sequence[str]], float]] = {
    "string_match_all": row_match_all,
    "string_match_part": row_match_part,
}


def task_score(metric: str, preds: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """Upstream's task score over raw predictions: post-process, then the named metric."""
    if metric not in METRICS:
        raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if not preds:
        raise ValueError("cannot score an empty set of predictions")
    return METRICS[metric]([postprocess_pred(p) for p in preds], refs)


def score_of_rows(row_scores: Sequence[float]) -> float:
    """A task score (0..100, 2 decimals) from per-row values of `ROW_METRICS` on post-processed
    predictions: the very float operations of upstream's aggregates (sum in row order, / n,
    * 100, round), so the same number to the last bit. Frameworks that score row by row (the
    lm-evaluation-harness export, the Inspect scorer) aggregate with this."""
    if not row_scores:
        raise ValueError("cannot score an empty set of rows")
    return round(sum(row_scores) / len(row_scores) * 100, 2)
