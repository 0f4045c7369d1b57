"""ONERULER's 7 tasks (mungg/OneRuler @ a3fe6af): RULER's needle and common-words tasks in 26
languages, their families and parameters; registered in the task catalog when this benchmark
loads."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from ruler.benchmarks.ruler.niah_params import oneruler_niah_params_problem
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
from ruler.kernel.registry import builtin_code

# Every template part is the language's prompt file (`prompt/<lang>/niah.txt`, a
# JSON object of parts, and `prompt/<lang>/cwe.txt`, read from the `oneruler` source), so a
# family's `template` here only says how its generator joins them. No answer prefix: upstream's
# `answer_prefix` part ("Please provide your answer in the following format:") ends the user
# prompt, it does not pre-fill the answer. Budgets are upstream's `synthetic/constants.py`'s (30
# for NIAH, 50 for CWE), reserved within L as in RULER v1. Metric: upstream's
# `eval/evaluate.py` exactly ("oneruler", registered by the evaluator).

ONERULER_NIAH = FamilySpec(
    name="oneruler_niah",
    module="ruler.benchmarks.oneruler.niah:FAMILY",
    template="{task}{question}{answer}",  # the niah.txt parts, each formatted by upstream's rule
    answer_prefix="",
    tokens_to_generate=30,
    metric="oneruler",
    params_problem=oneruler_niah_params_problem,
)

ONERULER_CWE = FamilySpec(
    name="oneruler_cwe",
    module="ruler.benchmarks.oneruler.cwe:FAMILY",
    template="{cwe}",  # the whole cwe.txt, formatted with context=<numbered words>, query=""
    answer_prefix="",
    tokens_to_generate=50,
    metric="oneruler",
)


def _oneruler_niah(name: str, k: int = 1, v: int = 1, q: int = 1,
                   relevant: bool = True) -> TaskSpec:
    """Upstream's `niah.py` arguments (`config/synthetic.yaml`): book haystack, word keys (the
    translated nouns), 7-digit number values; `num_needle_k` already raised to the queries'
    count as the script does; `relevant_needle` False: the asked key is absent (niah_none)."""
    params = dict(type_haystack="book", type_needle_k="words", type_needle_v="numbers",
                  num_needle_k=max(k, q), num_needle_v=v, num_needle_q=q,
                  relevant_needle=relevant)
    return TaskSpec(name, ONERULER_NIAH, MappingProxyType(params), sources=("oneruler",))


def _oneruler_cwe(name: str, freq_cw: int, freq_ucw: int, short: tuple[int, int]) -> TaskSpec:
    """`short`: the frequencies upstream's `common_words_extraction.py` switches to when
    max_seq_length <= `short_at_most` (8000: its own "8K" length)."""
    params = dict(freq_cw=freq_cw, freq_ucw=freq_ucw, num_cw=10, short_freq_cw=short[0],
                  short_freq_ucw=short[1], short_at_most=8000)
    return TaskSpec(name, ONERULER_CWE, MappingProxyType(params), sources=("oneruler",))


# Catalog names are prefixed (`or_`): upstream's `cwe` would clash with RULER's. The Parquet
# `task` column and folders use these names; `UPSTREAM_NAMES` gives upstream's.
_ONERULER_TASK_LIST = (
    _oneruler_niah("or_niah_single"),
    _oneruler_niah("or_niah_none", k=4, relevant=False),
    _oneruler_niah("or_niah_multikey", k=4),
    _oneruler_niah("or_niah_multivalue", v=4),
    _oneruler_niah("or_niah_multiquery", q=2),
    _oneruler_cwe("or_cwe", 20, 10, (10, 5)),
    _oneruler_cwe("or_cwe_easy", 30, 3, (10, 1)),
)

#: ONERULER's 7 tasks (built with `--benchmark oneruler`).
TASKS: tuple[str, ...] = tuple(t.name for t in _ONERULER_TASK_LIST)
#: The tasks of a cross-lingual config: upstream's CWE refuses `--xling` (notes: oneruler.md §5).
CROSS_LINGUAL_TASKS: tuple[str, ...] = tuple(
    t.name for t in _ONERULER_TASK_LIST if t.family is ONERULER_NIAH)
#: Catalog name -> upstream's task name (its `config_tasks.sh`, its output folders).
UPSTREAM_NAMES: Mapping[str, str] = MappingProxyType(
    {t: t.removeprefix("or_") for t in TASKS})



with builtin_code():
    for _task in _ONERULER_TASK_LIST:
        register_task(_task)
