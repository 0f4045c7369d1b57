"""RULER's metrics, exactly as upstream computes them: NVIDIA/RULER
`scripts/eval/synthetic/constants.py` (unchanged since the first commit), on the prediction
post-processed as `scripts/eval/evaluate.py:postprocess_pred` does
(`ruler.eval.metrics.specs.postprocess_pred`).

The two aggregate functions are upstream's code verbatim, including its quirks: matching is a
case-insensitive substring test with no word boundaries ('art' matches 'party'), and a
reference listed twice counts twice in `string_match_all`'s recall. The per-row forms give the
same numbers and let reports count, drop or inspect single rows. Plain functions over the
standard library: `ruler export lm-eval` copies their source.
"""

from __future__ import annotations

from typing import Sequence

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
