"""ONERULER's exported lm-evaluation-harness tasks: upstream's metric module, copied whole into
utils.py, and its tasks' aggregation."""

from __future__ import annotations

from typing import Sequence

from ruler.benchmarks.oneruler import metric
from ruler.eval.integrations.lm_eval_export import LmEvalHooks
from ruler.eval.metrics.specs import percent_of_rows


def aggregate_oneruler(row_scores: Sequence[float]) -> float:
    """Per ONERULER task: upstream's `avg_acc`, the share of rows right in percent (not
    rounded), as `ruler score` reports it."""
    return percent_of_rows(list(row_scores))


LM_EVAL = LmEvalHooks(code=(metric,), aggregation=aggregate_oneruler)
