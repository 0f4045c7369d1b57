"""RULER's 13 tasks: families (templates, answer prefixes, budgets, metrics) and parameters.

The single source of truth for every fact that must equal upstream RULER (NVIDIA/RULER
`scripts/data/synthetic/constants.py`, `scripts/synthetic.yaml`,
`scripts/eval/synthetic/constants.py`); registered in the task catalog when this benchmark
loads (`ruler.catalog.tasks.TASKS`).
"""

from __future__ import annotations

from types import MappingProxyType

import ruler.benchmarks.ruler.task_args as task_args
from ruler.benchmarks.ruler.niah_params import niah_params_problem
from ruler.catalog.tasks import FamilySpec, TaskSpec, register_task
from ruler.kernel.registry import builtin_code

NIAH = FamilySpec(
    name="niah",
    module="ruler.benchmarks.ruler.niah:FAMILY",
    template=(
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
        "memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are "
        "all the special magic {type_needle_v} for {query} mentioned in the provided text?"
    ),
    answer_prefix=(
        " The special magic {type_needle_v} for {query} mentioned in the provided text are"
    ),
    tokens_to_generate=128,
    metric="string_match_all",
    params_problem=niah_params_problem,
    configure=task_args.configure_niah,
)

VARIABLE_TRACKING = FamilySpec(
    name="variable_tracking",
    module="ruler.benchmarks.ruler.variable_tracking:FAMILY",
    template=(
        "Memorize and track the chain(s) of variable assignment hidden in the following text."
        "\n\n{context}\nQuestion: Find all variables that are assigned the value {query} in the "
        "text above."
    ),
    answer_prefix=(
        " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
        "variables are assigned the value {query}, they are: "
    ),
    tokens_to_generate=30,
    metric="string_match_all",
    list_answer=True,
    configure=task_args.configure_vt,
)

COMMON_WORDS = FamilySpec(
    name="common_words_extraction",
    module="ruler.benchmarks.ruler.common_words:FAMILY",
    template=(
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most "
        "common words in the above list?"
    ),
    answer_prefix=" Answer: The top 10 words that appear most often in the list are:",
    tokens_to_generate=120,
    metric="string_match_all",
    list_answer=True,
    configure=task_args.configure_cwe,
)

FREQ_WORDS = FamilySpec(
    name="freq_words_extraction",
    module="ruler.benchmarks.ruler.freq_words:FAMILY",
    template=(
        "Read the following coded text and track the frequency of each coded word. Find the three "
        "most frequently appeared coded words. {context}\nQuestion: Do not provide any "
        "explanation. Please ignore the dots '....'. What are the three most frequently appeared "
        "words in the above coded text?"
    ),
    answer_prefix=(
        " Answer: According to the coded text above, the three most frequently appeared words "
        "are:"
    ),
    tokens_to_generate=50,
    metric="string_match_all",
    list_answer=True,
    configure=task_args.configure_fwe,
)

QA = FamilySpec(
    name="qa",
    module="ruler.benchmarks.ruler.qa:FAMILY",
    template=(
        "Answer the question based on the given documents. Only give me the answer and do not "
        "output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the "
        "question based on the given documents. Only give me the answer and do not output any "
        "other words.\n\nQuestion: {query}"
    ),
    answer_prefix=" Answer:",
    tokens_to_generate=32,
    metric="string_match_part",
    units_bounded=False,
    configure=task_args.configure_qa,
)


def _niah(name: str, haystack: str, key: str, value: str, k: int = 1, v: int = 1,
          q: int = 1) -> TaskSpec:
    params = dict(type_haystack=haystack, type_needle_k=key, type_needle_v=value,
                  num_needle_k=k, num_needle_v=v, num_needle_q=q)
    return TaskSpec(name, NIAH, MappingProxyType(params),
                    sources=("essays", "punkt_tab") if haystack == "essay" else ())


_TASK_LIST = (
    _niah("niah_single_1", "noise", "words", "numbers"),
    _niah("niah_single_2", "essay", "words", "numbers"),
    _niah("niah_single_3", "essay", "words", "uuids"),
    _niah("niah_multikey_1", "essay", "words", "numbers", k=4),
    _niah("niah_multikey_2", "needle", "words", "numbers"),
    _niah("niah_multikey_3", "needle", "uuids", "uuids"),
    _niah("niah_multivalue", "essay", "words", "numbers", v=4),
    _niah("niah_multiquery", "essay", "words", "numbers", q=4),
    TaskSpec("vt", VARIABLE_TRACKING,
             MappingProxyType(dict(type_haystack="noise", num_chains=1, num_hops=4))),
    TaskSpec("cwe", COMMON_WORDS, MappingProxyType(dict(freq_cw=30, freq_ucw=3, num_cw=10))),
    TaskSpec("fwe", FREQ_WORDS, MappingProxyType(dict(alpha=2.0, coded_wordlen=6))),
    TaskSpec("qa_1", QA, MappingProxyType(dict(dataset="squad")), sources=("squad",)),
    TaskSpec("qa_2", QA, MappingProxyType(dict(dataset="hotpotqa")), sources=("hotpotqa",)),
)

#: RULER's 13 tasks in upstream's order (`scripts/config_tasks.sh`): what a build makes
#: unless told otherwise ("all"), and what the card lists besides the tasks a folder holds.
TASKS: tuple[str, ...] = tuple(t.name for t in _TASK_LIST)

with builtin_code():
    for _task in _TASK_LIST:
        register_task(_task)

#: Upstream's weights for wAvg (issue NVIDIA/RULER#82): k/21 over the paper's lengths.
PAPER_LENGTH_WEIGHTS_INC = tuple(k / 21 for k in range(1, 7))
