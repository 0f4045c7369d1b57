"""The 13 RULER tasks, RULERv2's 12 and ONERULER's 7: templates, answer prefixes, budgets,
metrics and parameters.

This module is the single source of truth for every fact that must equal upstream RULER
(NVIDIA/RULER `scripts/data/synthetic/constants.py`, `scripts/synthetic.yaml`,
`scripts/eval/synthetic/constants.py`). Everything else reads these values from here.

The catalog is also where other tasks join: `register_task(spec)` adds one to `TASKS` (a
`ruler.builder.registry.Registry`). A family's code (generator, checks, depth rules) joins its
constants in one object, `ruler.builder.tasks.family.TaskFamily`, found at the address its
`FamilySpec.module` names. A family outside this package registers its family and tasks from a
module or function that ruler imports through the `ruler.task_families` entry point group the
first time a name is not found (`TASKS`, `get_task`, `get_family`), in every process: the
CLI's, and each spawned worker's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping

from ruler.builder.errors import RulerError
from ruler.builder.registry import Registry
from ruler.builder.tasks.niah_params import niah_params_problem, oneruler_niah_params_problem
from ruler.builder.tasks.ruler2_prompts import NIAH_MULTIPLE, TOTAL


@dataclass(frozen=True)
class FamilySpec:
    """Constants shared by all tasks of one generator family."""

    name: str
    template: str
    answer_prefix: str
    tokens_to_generate: int
    metric: str
    # Where the family's code is (`ruler.builder.tasks.family.TaskFamily`, which holds this
    # spec): "package.module:ATTR", or a module that registers it when imported. Imported the
    # first time the family is asked for, so one family's dependencies never load for
    # another. None: registered by whoever registered its tasks (a plug-in).
    module: str | None = None
    # `params_problem(params)`: why the family's generator cannot build a task with these
    # parameters (one line), or None; `register_task` refuses such a task. None: any.
    params_problem: Callable[[Mapping[str, Any]], str | None] | None = None
    # False: a haystack unit is a source's document, of any size (HotpotQA holds paragraphs of
    # 1,494 llama-3.1 tokens in its first 100 questions), so a row falls short of L by up to
    # one document, as upstream's, and its benchmark's fill promise
    # (`tasks.benchmarks.FillPromise`) is not held against it.
    units_bounded: bool = True


@dataclass(frozen=True)
class TaskSpec:
    """A task: a family plus its parameters (one of the 13 standard tasks, or a registered
    one)."""

    name: str
    family: FamilySpec
    params: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # ids in builder.sources.SOURCES this task reads

    @property
    def tokens_to_generate(self) -> int:
        """The tokens a row reserves for the answer: upstream's per-family budget (a build
        variant may reserve another: builder.variants, TaskGenerator.tokens_to_generate)."""
        return self.family.tokens_to_generate

    @property
    def metric(self) -> str:
        return self.family.metric


NIAH = FamilySpec(
    name="niah",
    module="ruler.builder.tasks.niah:FAMILY",
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
)

VARIABLE_TRACKING = FamilySpec(
    name="variable_tracking",
    module="ruler.builder.tasks.variable_tracking:FAMILY",
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
)

COMMON_WORDS = FamilySpec(
    name="common_words_extraction",
    module="ruler.builder.tasks.common_words:FAMILY",
    template=(
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most "
        "common words in the above list?"
    ),
    answer_prefix=" Answer: The top 10 words that appear most often in the list are:",
    tokens_to_generate=120,
    metric="string_match_all",
)

FREQ_WORDS = FamilySpec(
    name="freq_words_extraction",
    module="ruler.builder.tasks.freq_words:FAMILY",
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
)

QA = FamilySpec(
    name="qa",
    module="ruler.builder.tasks.qa:FAMILY",
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
)

# --- RULERv2 (NeMo-Skills `ruler2`): three generators, one family per metric --------------
# The prompts are in `ruler2_prompts`; a family's `template` is the frame its generator fills.
# No answer prefix (upstream's instruct prompts end with the question), 16,384 tokens to
# generate (upstream's RULERv2 example: `++inference.tokens_to_generate=16384`, greedy), not
# counted in `length` (RULERv2's length rule, `Benchmark.length_rule`).

RULER2_TOKENS_TO_GENERATE = 16384


def _ruler2_family(name: str, module: str, template: str, metric: str,
                   attr: str = "FAMILY", units_bounded: bool = True) -> FamilySpec:
    return FamilySpec(name=name, module=f"ruler.builder.tasks.{module}:{attr}", template=template,
                      answer_prefix="", tokens_to_generate=RULER2_TOKENS_TO_GENERATE,
                      metric=metric, units_bounded=units_bounded)


RULER2_NIAH = _ruler2_family("ruler2_niah", "ruler2_niah", NIAH_MULTIPLE,
                             "ruler2_all")
RULER2_MMLU = _ruler2_family("ruler2_mmlu", "ruler2_mmlu", TOTAL, "ruler2_all")
RULER2_MMLU_2STEPS = _ruler2_family("ruler2_mmlu_2steps", "ruler2_mmlu", TOTAL,
                                    "ruler2_2steps", "FAMILY_2STEPS")
RULER2_MMLU_CHOICE = _ruler2_family("ruler2_mmlu_choice", "ruler2_mmlu", TOTAL,
                                    "multichoice", "FAMILY_CHOICE")
RULER2_QA = _ruler2_family("ruler2_qa", "ruler2_qa", TOTAL, "ruler2_part",
                           units_bounded=False)  # HotpotQA's paragraphs

# --- ONERULER (mungg/OneRuler @ a3fe6af): RULER's needle and common-words tasks in 26 ----------
# languages. Every template part is the language's prompt file (`prompt/<lang>/niah.txt`, a
# JSON object of parts, and `prompt/<lang>/cwe.txt`, read from the `oneruler` source), so a
# family's `template` here only says how its generator joins them. No answer prefix: upstream's
# `answer_prefix` part ("Please provide your answer in the following format:") ends the user
# prompt, it does not pre-fill the answer. Budgets are upstream's `synthetic/constants.py`'s (30
# for NIAH, 50 for CWE), reserved within L as in RULER v1. Metric: upstream's
# `eval/evaluate.py` exactly ("oneruler", registered by the evaluator).

ONERULER_NIAH = FamilySpec(
    name="oneruler_niah",
    module="ruler.builder.tasks.oneruler_niah:FAMILY",
    template="{task}{question}{answer}",  # the niah.txt parts, each formatted by upstream's rule
    answer_prefix="",
    tokens_to_generate=30,
    metric="oneruler",
    params_problem=oneruler_niah_params_problem,
)

ONERULER_CWE = FamilySpec(
    name="oneruler_cwe",
    module="ruler.builder.tasks.oneruler_cwe:FAMILY",
    template="{cwe}",  # the whole cwe.txt, formatted with context=<numbered words>, query=""
    answer_prefix="",
    tokens_to_generate=50,
    metric="oneruler",
)

#: The families of the tasks below (their code registers lazily at these specs' addresses:
#: `ruler.builder.tasks.family`).
BUILTIN_FAMILIES: tuple[FamilySpec, ...] = (
    NIAH, VARIABLE_TRACKING, COMMON_WORDS, FREQ_WORDS, QA, RULER2_NIAH, RULER2_MMLU,
    RULER2_MMLU_2STEPS, RULER2_MMLU_CHOICE, RULER2_QA, ONERULER_NIAH, ONERULER_CWE)


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
STANDARD_TASKS: tuple[str, ...] = tuple(t.name for t in _TASK_LIST)


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

#: RULERv2's 12 tasks in NeMo-Skills' order (family x difficulty). In `TASKS`, not in
#: `STANDARD_TASKS`: a v1 build never makes them (`ruler.builder.tasks.benchmarks`).
RULER2_TASKS: tuple[str, ...] = tuple(t.name for t in _RULER2_TASK_LIST)


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
# `task` column and folders use these names; `ONERULER_UPSTREAM_NAMES` gives upstream's.
_ONERULER_TASK_LIST = (
    _oneruler_niah("or_niah_single"),
    _oneruler_niah("or_niah_none", k=4, relevant=False),
    _oneruler_niah("or_niah_multikey", k=4),
    _oneruler_niah("or_niah_multivalue", v=4),
    _oneruler_niah("or_niah_multiquery", q=2),
    _oneruler_cwe("or_cwe", 20, 10, (10, 5)),
    _oneruler_cwe("or_cwe_easy", 30, 3, (10, 1)),
)

#: ONERULER's 7 tasks (in `TASKS`, not in `STANDARD_TASKS`: built with `--benchmark oneruler`).
ONERULER_TASKS: tuple[str, ...] = tuple(t.name for t in _ONERULER_TASK_LIST)
#: The tasks of a cross-lingual config: upstream's CWE refuses `--xling` (notes: oneruler.md §5).
ONERULER_CROSS_LINGUAL_TASKS: tuple[str, ...] = tuple(
    t.name for t in _ONERULER_TASK_LIST if t.family is ONERULER_NIAH)
#: Catalog name -> upstream's task name (its `config_tasks.sh`, its output folders).
ONERULER_UPSTREAM_NAMES: Mapping[str, str] = MappingProxyType(
    {t: t.removeprefix("or_") for t in ONERULER_TASKS})

#: The entry point group of task-family plug-ins: each entry point names a module that
#: registers its families and tasks when imported, or a function that does when called.
PLUGIN_GROUP = "ruler.task_families"

#: Every task: the 13 standard tasks in upstream's order, RULERv2's 12, ONERULER's 7, then
#: registered ones in the order they were registered (a plug-in's, loaded when a name is
#: missing or the whole list is read).
TASKS: Registry[TaskSpec] = Registry("task", PLUGIN_GROUP,
                                     accepts=lambda obj: isinstance(obj, TaskSpec),
                                     name_of=lambda spec: spec.name)
def params_problem(spec: TaskSpec) -> str | None:
    """Why `spec`'s family cannot build it (`FamilySpec.params_problem`), or None."""
    check = spec.family.params_problem
    return check(spec.params) if check is not None else None


for _task in (*_TASK_LIST, *_RULER2_TASK_LIST, *_ONERULER_TASK_LIST):
    assert params_problem(_task) is None, (_task.name, params_problem(_task))
    TASKS.register(_task, origin="ruler")


class _FamilyConstants(Mapping[str, FamilySpec]):
    """Every task's family constants by family name, read off `TASKS` (their one record)."""

    def _specs(self, loaded_only: bool = False) -> dict[str, FamilySpec]:
        tasks = TASKS.loaded_items() if loaded_only else TASKS.items()
        return {spec.family.name: spec.family for _, spec in tasks}

    def __getitem__(self, name: str) -> FamilySpec:
        return self._specs()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs())

    def __len__(self) -> int:
        return len(self._specs())

    def known(self, name: str) -> FamilySpec | None:
        """The constants of family `name` among the tasks registered so far (nothing loaded)."""
        return self._specs(loaded_only=True).get(name)


#: The family constants of every task in `TASKS`, by family name.
FAMILIES = _FamilyConstants()

#: A task name is a folder and part of config names (`<tokenizer>--<task>`).
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task to the catalog (registering the same spec again does nothing). Its family's
    code is found at `spec.family.module` or registered apart
    (`ruler.builder.tasks.family.register_family`)."""
    if not _TASK_NAME.fullmatch(spec.name) or "--" in spec.name:
        raise RulerError(f"task name {spec.name!r}: use letters, digits, '_', '.' and single "
                         f"'-' (it names a folder and is part of config names)")
    known = dict(TASKS.loaded_items()).get(spec.name)
    if known is not None and known != spec:
        raise RulerError(f"task {spec.name!r} is in the catalog already (family "
                         f"{known.family.name!r}); a registered task cannot replace it")
    family = FAMILIES.known(spec.family.name)
    if family is not None and family != spec.family:
        raise RulerError(f"task {spec.name!r}: family {spec.family.name!r} is in the catalog "
                         f"already with other constants (template, prefix, budget or metric)")
    problem = params_problem(spec)
    if problem:
        raise RulerError(f"task {spec.name!r}: family {spec.family.name!r} cannot build these "
                         f"parameters: {problem}")
    return TASKS.register(spec)

#: The paper's lengths (4K..128K); any length >= a task's minimum can be built.
PAPER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)

#: Past the paper: 256K, 512K and 1M (`--lengths long`). Every task builds there and beyond
#: (tested to 2M); sources that run out are repeated as upstream does (cards.repeated).
LONG_LENGTHS = (262144, 524288, 1048576)

#: ONERULER's lengths: upstream's `config_models.sh` (`SEQ_LENGTHS=(8000 32000 64000 128000)`,
#: the paper's 8K..128K), not powers of two; the default of `--benchmark oneruler`.
ONERULER_LENGTHS = (8000, 32000, 64000, 128000)

#: Named length sets for `--lengths` (combinable: `paper,long`).
LENGTH_SETS = {"paper": PAPER_LENGTHS, "long": LONG_LENGTHS, "oneruler": ONERULER_LENGTHS}

#: Upstream's weights for wAvg (issue NVIDIA/RULER#82): k/21 over the paper's lengths.
PAPER_LENGTH_WEIGHTS_INC = tuple(k / 21 for k in range(1, 7))


def get_task(name: str) -> TaskSpec:
    """The task `name`, or a RulerError naming the known ones."""
    return TASKS[name]


def task_rank(name: str) -> tuple[int, str]:
    """Sort key of a task name in upstream's order (the catalog's); names it does not know
    come after every task, by name."""
    order = {task: i for i, task in enumerate(TASKS)}
    return order.get(name, len(order)), name


def in_task_order(names: Iterable[str]) -> list[str]:
    """`names` (once each) in upstream's task order, unknown names after, by name: the order
    of every list of tasks ruler shows (card, reports, exports)."""
    return sorted(set(names), key=task_rank)
