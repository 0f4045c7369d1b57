"""RULERv2's 12 tasks (NeMo-Skills `ruler2`): three generators, one family per metric, and each
task's parameters; registered in the task catalog when this benchmark loads."""

from __future__ import annotations

from types import MappingProxyType

from ruler.benchmarks.ruler2.prompts import NIAH_MULTIPLE, TOTAL
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
from ruler.kernel.registry import builtin_code

# The prompts are in `ruler.benchmarks.ruler2.prompts`; a family's `template` is the frame
# its generator fills.
# No answer prefix (upstream's instruct prompts end with the question), 16,384 tokens to
# generate (upstream's RULERv2 example: `++inference.tokens_to_generate=16384`, greedy), not
# counted in `length` (RULERv2's length rule, `Benchmark.length_rule`).

RULER2_TOKENS_TO_GENERATE = 16384


def _ruler2_family(name: str, module: str, template: str, metric: str,
                   attr: str = "FAMILY", units_bounded: bool = True) -> FamilySpec:
    return FamilySpec(name=name, module=f"ruler.benchmarks.ruler2.{module}:{attr}",
                      template=template, answer_prefix="",
                      tokens_to_generate=RULER2_TOKENS_TO_GENERATE, metric=metric,
                      units_bounded=units_bounded)


RULER2_NIAH = _ruler2_family("ruler2_niah", "niah", NIAH_MULTIPLE,
                             "ruler2_all")
RULER2_MMLU = _ruler2_family("ruler2_mmlu", "mmlu", TOTAL, "ruler2_all")
RULER2_MMLU_2STEPS = _ruler2_family("ruler2_mmlu_2steps", "mmlu", TOTAL,
                                    "ruler2_2steps", "FAMILY_2STEPS")
RULER2_MMLU_CHOICE = _ruler2_family("ruler2_mmlu_choice", "mmlu", TOTAL,
                                    "multichoice", "FAMILY_CHOICE")
RULER2_QA = _ruler2_family("ruler2_qa", "qa", TOTAL, "ruler2_part",
                           units_bounded=False)  # HotpotQA's paragraphs


def _ruler2_niah(name: str, num_needle_v: int) -> TaskSpec:
    params = dict(type_haystack="needle", type_needle_k="words", type_needle_v="numbers",
                  num_needle_k=1, num_needle_v=num_needle_v, num_needle_q=1, num_digits_v=10)
    return TaskSpec(name, RULER2_NIAH, MappingProxyType(params))


def _ruler2_mmlu(name: str, family: FamilySpec, fewshot: int, num_order: int, task_type: str,
                 algo_type: str) -> TaskSpec:
    params = dict(dataset="mmlu", fewshot=fewshot, num_order=num_order, task_type=task_type,
                  algo_type=algo_type)
    return TaskSpec(name, family, MappingProxyType(params), sources=("mmlu",))


def _ruler2_qa(name: str, task_type: str, kind: str) -> TaskSpec:
    """`kind`: the query type of a retrieve task (doc, question), the algorithm of a solve
    task (single, 2steps)."""
    params = dict(dataset="hotpotqa", fewshot=0, task_type=task_type,
                  **{"query_type" if task_type == "retrieve" else "algo_type": kind})
    return TaskSpec(name, RULER2_QA, MappingProxyType(params), sources=("hotpotqa_hub",))


# The arguments NeMo-Skills' `prepare_data.py` passes each task's generator (notes: ruler2.md
# section 1); the metric follows `prepare_init.py`'s rule through the family.
_RULER2_TASK_LIST = (
    _ruler2_niah("mk_niah_basic", 1),
    _ruler2_mmlu("mk_niah_easy", RULER2_MMLU, 0, 0, "retrieve", "single"),
    _ruler2_mmlu("mk_niah_medium", RULER2_MMLU_CHOICE, 5, 0, "solve", "2steps"),
    _ruler2_mmlu("mk_niah_hard", RULER2_MMLU_CHOICE, 5, 0, "solve", "single"),
    _ruler2_niah("mv_niah_basic", 4),
    _ruler2_mmlu("mv_niah_easy", RULER2_MMLU, 0, 4, "niah", "single"),
    _ruler2_mmlu("mv_niah_medium", RULER2_MMLU_2STEPS, 0, 4, "retrieve", "2steps"),
    _ruler2_mmlu("mv_niah_hard", RULER2_MMLU, 0, 4, "retrieve", "single"),
    _ruler2_qa("qa_basic", "retrieve", "doc"),
    _ruler2_qa("qa_easy", "retrieve", "question"),
    _ruler2_qa("qa_medium", "solve", "2steps"),
    _ruler2_qa("qa_hard", "solve", "single"),
)

#: RULERv2's 12 tasks in NeMo-Skills' order (family x difficulty): a v1 build never makes
#: them (built with `--benchmark v2`).
TASKS: tuple[str, ...] = tuple(t.name for t in _RULER2_TASK_LIST)



with builtin_code():
    for _task in _RULER2_TASK_LIST:
        register_task(_task)
