"""RULERv2's exported lm-evaluation-harness tasks: NeMo-Skills' metric modules, copied whole into
utils.py, and its tasks' aggregation."""

from __future__ import annotations

from typing import Sequence

from ruler.benchmarks.ruler2 import metric, multichoice
from ruler.eval.integrations.lm_eval_export import LmEvalHooks
from ruler.eval.metrics.specs import percent_of_rows


def aggregate_ruler2(row_scores: Sequence[float]) -> float:
    """Per RULERv2 task: NeMo-Skills' score, the rows' mean in percent (not rounded), as
    `ruler score` reports it."""
    return percent_of_rows(list(row_scores))


LM_EVAL = LmEvalHooks(code=(metric, multichoice), aggregation=aggregate_ruler2)
