"""RULER (v1, id "ruler"): NVIDIA/RULER's 13 synthetic tasks, built for one tokenizer per config
(`<tokenizer>`); aggregated as the paper's Table 3 (per-length mean, Avg., wAvg. inc/dec and
the effective length)."""

from ruler.benchmarks.ruler import sources, tasks
from ruler.benchmarks.ruler.metrics import (
    row_match_all,
    row_match_part,
    string_match_all,
    string_match_part,
)
from ruler.catalog.benchmarks import Aggregation, Benchmark
from ruler.eval.metrics.specs import MetricSpec, postprocess_pred, score_of_rows

#: Its metrics: upstream's, on the post-processed prediction; a task's score is upstream's own
#: aggregate (rounded to 2 decimals), the same number as `score_of_rows` of the rows' values.
METRICS = {
    "string_match_all": MetricSpec(row_match_all, postprocess_pred, score_of_rows, "ruler",
                                   task_score=string_match_all),
    "string_match_part": MetricSpec(row_match_part, postprocess_pred, score_of_rows, "ruler",
                                    task_score=string_match_part),
}

BENCHMARK = Benchmark(
    id="ruler", title="RULER", tasks=tasks.TASKS, aliases=("v1",), family="RULER",
    help="v1 (RULER's 13 tasks, config <tokenizer>; the default)",
    sources=sources.SOURCES, metrics=METRICS,
    aggregation=Aggregation(weighted=True, effective_length=True),
    card_body="ruler.benchmarks.ruler.card:BODY",
    report="ruler.benchmarks.ruler.failure_modes.report_hooks:REPORT",
    lm_eval="ruler.benchmarks.ruler.lm_eval:LM_EVAL",
    failure_labels="ruler.benchmarks.ruler.failure_modes.cell:label_cell",
    fake_answers="ruler.benchmarks.ruler.failure_modes.fake_answers:FAKE_ANSWERS",
    suites="ruler.benchmarks.ruler.suites:SUITES",
)
