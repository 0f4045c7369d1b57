"""RULERv2 (id "ruler2"): NeMo-Skills' `ruler2`, 12 tasks (needle, MMLU and HotpotQA families x
four difficulties) in configs `<tokenizer>--v2`, rows whose `length` counts the prompt alone
(its 16,384 tokens to generate come on top)."""

from ruler.benchmarks.ruler2 import metric, multichoice, sources, tasks
from ruler.catalog.benchmarks import Aggregation, Benchmark
from ruler.catalog.length_rules import PROMPT_ONLY
from ruler.eval.metrics.specs import MetricSpec, percent_of_rows, raw_generation

#: Its metrics, as NeMo-Skills scores them: on the raw generation, a task's score the mean of
#: its rows' values in percent (not rounded).
METRICS = {
    "ruler2_all": MetricSpec(metric.ruler2_all, raw_generation, percent_of_rows, "ruler2"),
    "ruler2_2steps": MetricSpec(metric.ruler2_2steps, raw_generation, percent_of_rows,
                                "ruler2"),
    "ruler2_part": MetricSpec(metric.ruler2_part, raw_generation, percent_of_rows, "ruler2"),
    "multichoice": MetricSpec(multichoice.multichoice, raw_generation, percent_of_rows,
                              "ruler2", gold=multichoice.boxed_answer),
}


def prompt_mode(has_chat_template: bool) -> str:
    """How RULERv2 rows are counted (`catalog.tokenizer.PROMPT_MODES`): NeMo-Skills sends the
    question as the one user message and the server adds the generation prompt, which is
    what mode "reasoning" renders (a user turn and the generation prompt, nothing pre-filled;
    "chat" would continue an empty assistant turn, which for Llama 3 lacks the "\n\n" the
    generation prompt ends with). Without a chat template: BOS + the question ("base")."""
    return "reasoning" if has_chat_template else "base"


BENCHMARK = Benchmark(
    id="ruler2", title="RULERv2", tasks=tasks.TASKS, aliases=("v2",), family="RULER",
    help=f"v2 (RULERv2's 12 tasks, NeMo-Skills' ruler2: config <tokenizer>--v2, rows whose "
         f"length counts the prompt only, <= L, tokens_to_generate "
         f"{tasks.RULER2_TOKENS_TO_GENERATE} on top; its MMLU and HotpotQA inputs: `ruler "
         f"sources fetch mmlu hotpotqa_hub`)",
    config_suffix="v2", prompt_mode=prompt_mode, length_rule=PROMPT_ONLY,
    # its rows count no output budget and have no depth sweep, base or no-context variant
    variants=("", "replicate"), metrics=METRICS,
    aggregation=Aggregation(
        text="(NeMo-Skills' RULERv2 score, `ruler2_score`); Avg.: their mean over the lengths. "
             "RULERv2 defines no weighted averages and no effective length. Task scores are "
             "NeMo-Skills' `accuracy` (ruler2 metrics) or `symbolic_correct` (multichoice) in "
             "percent, not rounded."),
    sources=sources.SOURCES,
    card_section="ruler.benchmarks.ruler2.card:ruler2_section",
    card_body="ruler.benchmarks.ruler.card:BODY",
    report="ruler.benchmarks.ruler2.report:REPORT",
    lm_eval="ruler.benchmarks.ruler2.lm_eval:LM_EVAL",
)
