"""The lm-evaluation-harness hooks of the exported RULER tasks.

`ruler export lm-eval` writes the task folder's `utils.py` from the source text of these
functions and of the `ruler.eval.metrics.specs` code they call (see `lm_eval_export.render_utils`),
so the folder needs nothing but lm_eval and the standard library, and scores with the very code
`ruler score` runs. Keep this module to plain functions over those names: everything they use
must be copied into `utils.py` too.
"""

from __future__ import annotations

from typing import Any, Sequence

from ruler.eval.metrics.specs import (
    KEYED_METRICS,
    PREPARE,
    ROW_METRICS,
    score_of_rows,
)

#: Dataset config -> the build key a keyed metric reads of its rows (what its manifest entry
#: records, a language "ko" or "en-ko"; `metrics.build_key`). `utils.py` holds the table of
#: the builds it was exported from (`lm_eval_export.render_utils`): a config's name is never
#: read for it.
METRIC_KEYS: dict[str, str] = {}


def process_results(doc: dict[str, Any], results: Sequence[str]) -> dict[str, float]:
    """Per row: upstream's value of the row's own metric (0..1) on the completion (the text
    generated after `answer_prefix`), prepared as that metric's upstream does (post-processed,
    or as generated). A keyed metric also reads the row's task and what its build records
    (`METRIC_KEYS` of the row's config, its `tokenizer` column)."""
    metric = doc["metric"]
    prediction = PREPARE[metric](results[0])
    keys: tuple[str, ...] = ()
    if metric in KEYED_METRICS:
        if doc["tokenizer"] not in METRIC_KEYS:
            raise ValueError(f"rows of config {doc['tokenizer']!r} are scored with metric "
                             f"{metric!r}, which reads what the build of the config records; "
                             f"this folder was exported for "
                             f"{', '.join(METRIC_KEYS) or 'no such build'}: export the build "
                             f"of these rows (`ruler export lm-eval`)")
        keys = (doc["task"], METRIC_KEYS[doc["tokenizer"]])
    return {"score": ROW_METRICS[metric](prediction, list(doc["outputs"]), *keys)}


def aggregate(row_scores: Sequence[float]) -> float:
    """Per RULER task: upstream's score, 0..100 rounded to 2 decimals, as `ruler score`
    reports it."""
    return score_of_rows(list(row_scores))
