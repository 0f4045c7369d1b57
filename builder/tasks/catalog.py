"""The 13 RULER tasks: templates, answer prefixes, budgets, metrics and parameters.

This module is the single source of truth for every fact that must equal upstream RULER
(NVIDIA/RULER `scripts/data/synthetic/constants.py`, `scripts/synthetic.yaml`,
`scripts/eval/synthetic/constants.py`). Everything else reads these values from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class FamilySpec:
    """Constants shared by all tasks of one generator family."""

    name: str
    template: str
    answer_prefix: str
    tokens_to_generate: int
    metric: str


@dataclass(frozen=True)
class TaskSpec:
    """One of the 13 standard tasks: a family plus its parameters."""

    name: str
    family: FamilySpec
    params: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # ids in builder.sources.SOURCES this task reads
    # A variant build's reserved output budget (builder.variants); None: upstream's budget.
    output_budget: int | None = None

    @property
    def tokens_to_generate(self) -> int:
        """The tokens a row reserves for the answer: upstream's per-family budget, or the
        reserved output budget of an `--output-budget` variant."""
        return self.output_budget or self.family.tokens_to_generate

    @property
    def metric(self) -> str:
        return self.family.metric


NIAH = FamilySpec(
    name="niah",
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
)

VARIABLE_TRACKING = FamilySpec(
    name="variable_tracking",
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
    template=(
        "Answer the question based on the given documents. Only give me the answer and do not "
        "output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the "
        "question based on the given documents. Only give me the answer and do not output any "
        "other words.\n\nQuestion: {query}"
    ),
    answer_prefix=" Answer:",
    tokens_to_generate=32,
    metric="string_match_part",
)

FAMILIES: Mapping[str, FamilySpec] = MappingProxyType(
    {f.name: f for f in (NIAH, VARIABLE_TRACKING, COMMON_WORDS, FREQ_WORDS, QA)}
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

#: The 13 standard tasks in upstream's order (`scripts/config_tasks.sh`).
TASKS: Mapping[str, TaskSpec] = MappingProxyType({t.name: t for t in _TASK_LIST})

#: Families whose gold position a depth-swept build (`ruler build --depths N`) controls:
#: needles (niah) and gold documents (qa). vt's chain is spread over the context by design;
#: cwe/fwe answers are spread through the whole text.
SWEPT_FAMILIES = frozenset({"niah", "qa"})

#: The tasks a depth-swept build holds, in upstream's order.
SWEPT_TASKS = tuple(t.name for t in _TASK_LIST if t.family.name in SWEPT_FAMILIES)

#: The paper's lengths (4K..128K); any length >= a task's minimum can be built.
PAPER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)

#: Past the paper: 256K, 512K and 1M (`--lengths long`). Every task builds there and beyond
#: (tested to 2M); sources that run out are repeated as upstream does (cards.repeated).
LONG_LENGTHS = (262144, 524288, 1048576)

#: Named length sets for `--lengths` (combinable: `paper,long`).
LENGTH_SETS = {"paper": PAPER_LENGTHS, "long": LONG_LENGTHS}

#: Upstream's weights for wAvg (issue NVIDIA/RULER#82): k/21 over the paper's lengths.
PAPER_LENGTH_WEIGHTS_INC = tuple(k / 21 for k in range(1, 7))


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        from ruler.builder.errors import RulerError

        raise RulerError(
            f"unknown task {name!r}; known tasks: {', '.join(TASKS)}"
        ) from None


def task_rank(name: str) -> tuple[int, str]:
    """Sort key of a task name in upstream's order (the catalog's); names it does not know
    come after every task, by name."""
    order = {task: i for i, task in enumerate(TASKS)}
    return order.get(name, len(order)), name


def in_task_order(names: Iterable[str]) -> list[str]:
    """`names` (once each) in upstream's task order, unknown names after, by name: the order
    of every list of tasks ruler shows (card, reports, exports)."""
    return sorted(set(names), key=task_rank)
