"""RULERv2's MMLU tasks (mk_niah_easy/medium/hard, mv_niah_easy/medium/hard): MMLU questions
under 7-digit ids, one of them (a `test` question) asked about.

Upstream (`prepare_mmlu.py`): each question is `question + "\\nA. " + c0 + ... + "\\nD. " + c3`
with every run of whitespace made one space. A prompt with `n` haystack questions (from
`auxiliary_train`, each repeated ceil(n / len) times in the pool when n exceeds it) gives them
ids: n + 1 ids, or with `num_order` k, ceil((n + 1) / k) ids each used k times (shuffled, cut
to n + 1), so up to k questions share an id and the problem names which one
("the 3rd (1 indexed) Question 1234567", by inflect's ordinal). Few-shot examples (solve
tasks) are 5 of the haystack questions, with their solutions. The test question goes in at a
uniformly drawn position 0..n. The answer: the question's text (retrieve), the texts of all
questions with its id in context order (niah), its letter (solve).

Which test question sample i asks about: a fixed random order of the test split per task
(upstream samples N of them after its size search). Ids are distinct where upstream's may
collide by chance (`ruler2_items`).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Mapping, Sequence

from ruler.benchmarks.ruler2.items import (
    SampleStreams,
    aimed_step,
    assemble,
    draw_ids,
    id_stream,
    permutation_stream,
    split_ids,
)
from ruler.benchmarks.ruler2.prompts import (
    FEWSHOT,
    MMLU_CHOICES,
    MMLU_CONTEXT,
    MMLU_EXAMPLE_TAIL,
    MMLU_PROBLEM,
    MMLU_QUESTION,
    MMLU_SOLUTION,
    ORDER,
)
from ruler.benchmarks.ruler2.tasks import RULER2_MMLU, RULER2_MMLU_2STEPS, RULER2_MMLU_CHOICE
from ruler.catalog.base import Draft, TaskGenerator
from ruler.catalog.family import TaskFamily
from ruler.catalog.hub_sources import read_split
from ruler.kernel.errors import RulerError
from ruler.kernel.rng import below, derive_seed

LETTERS = "ABCD"


@dataclass(frozen=True)
class Question:
    text: str  # as upstream writes it: question and choices, whitespace runs made one space
    letter: str


@dataclass(frozen=True)
class MmluData:
    test: tuple[Question, ...]
    haystack: tuple[Question, ...]


def one_space(text: str) -> str:
    """`re.sub(r"\\s+", " ", text)`, upstream's rule (every whitespace run one space), made by
    str.split, which splits at the same characters (str.isspace) several times faster: the
    real auxiliary_train has 99,842 questions."""
    words = text.split()
    if not words:
        return " " if text else ""
    return (" " if text[0].isspace() else "") + " ".join(words) + \
        (" " if text[-1].isspace() else "")


def read_mmlu(source) -> MmluData:
    def questions(split: str) -> tuple[Question, ...]:
        out = []
        for row in read_split(source, split, ("question", "choices", "answer")):
            choices, answer = row["choices"], row["answer"]
            if not isinstance(row["question"], str) or not isinstance(choices, list) \
                    or len(choices) != 4 or answer not in range(4):
                raise RulerError(f"source {source.spec.id!r} split {split}: a row is not an "
                                 f"MMLU question (question, 4 choices, answer 0-3): {row!r}"[:300])
            text = MMLU_CHOICES.format(question=row["question"], c0=choices[0], c1=choices[1],
                                       c2=choices[2], c3=choices[3])
            out.append(Question(one_space(text), LETTERS[answer]))
        if not out:
            raise RulerError(f"source {source.spec.id!r} split {split} has no rows")
        return tuple(out)

    return MmluData(questions("test"), questions("auxiliary_train"))


def ordinal(count: int) -> str:
    """inflect's `engine().ordinal(count)` for a positive integer ("1st", "2nd", "3rd",
    "4th", "11th", "21st", ...), which upstream calls. Restated, not imported: importing
    inflect takes seconds (its typeguard checks compile at import), longer than a whole
    4K build of a task; tests/builder/tasks/test_ruler2_tasks.py checks the two agree."""
    suffix = "th" if count % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(
        count % 10, "th")
    return f"{count}{suffix}"


class Ruler2MmluGenerator(TaskGenerator):
    unit = "haystack questions"

    @property
    def calibration_step(self) -> int:
        return aimed_step(self.max_seq_length, 90, 10)  # a question is about 90 tokens

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        self.fewshot, self.num_order = p["fewshot"], p["num_order"]
        self.task_type, self.algo_type = p["task_type"], p["algo_type"]
        self.instruction = MMLU_CONTEXT[self.task_type]
        self.problem = MMLU_PROBLEM[(self.task_type, self.algo_type)]
        source = ctx.source("mmlu")
        self.data: MmluData = ctx.resource(f"ruler2-mmlu:{source.path}",
                                           lambda: read_mmlu(source), content=source.sha256)
        self._streams = SampleStreams()

    #: The six tasks draw the same questions: their counts are made once for all six.
    count_scope = "ruler2:mmlu"

    @property
    def min_size(self) -> int:
        return max(1, self.fewshot)  # the examples are haystack questions

    def check_samples(self, num_samples: int) -> None:
        if num_samples > len(self.data.test):
            raise RulerError(f"task {self.spec.name}: the MMLU test split has "
                             f"{len(self.data.test):,} questions; --samples {num_samples:,} "
                             f"asks for more")

    @cached_property
    def _order(self) -> tuple[Iterator[int], list[int]]:
        """Which test question each sample asks about: a random order of the test split,
        fixed by the seed, the task and the variant (the same for every tokenizer and length;
        a replicate draws its own); a larger --samples extends a smaller one. Drawn as far as
        the samples asked for reach (a stream whose first k picks are the order's first k):
        the whole order of the 14,042 questions took longer than a 4K file's samples."""
        variant = sorted(self.ctx.variant.record().items())
        rng = random.Random(derive_seed(self.ctx.seed, "ruler2-mmlu-questions", self.spec.name,
                                        variant))
        return permutation_stream(rng, len(self.data.test)), []

    def test_question(self, index: int) -> Question:
        stream, drawn = self._order
        if index >= len(drawn):
            drawn.extend(itertools.islice(stream, index + 1 - len(drawn)))
        return self.data.test[drawn[index]]

    def _ids(self, key: tuple[int, int], seed: int, size: int) -> list[str]:
        """n + 1 ids, the test question's last (upstream's layout). Without repeats every id
        is drawn alike, so the test question's is drawn first: the problem naming it then
        stays the same while the fitter tries sizes."""
        if self.num_order == 0:
            ids = self._streams.first(key, "ids", size + 1,
                                      lambda: id_stream(random.Random(seed)))
            return [*ids[1:], ids[0]]
        labels = random.Random(seed)
        ids = draw_ids(labels, math.ceil((size + 1) / self.num_order)) * self.num_order
        labels.shuffle(ids)
        return ids[:size + 1]

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        needle = self.test_question(index)
        # The questions and the ids come from streams of their own, so a larger draft of the
        # sample has the smaller one's questions under the same ids (no shuffle of ids): the
        # fitter's drafts then share their items, counted once, and draw them once.
        picks, labels = rng.getrandbits(64), rng.getrandbits(64)
        pool = len(self.data.haystack)
        repeats = math.ceil(size / pool) if size > pool else 1
        picked = [self.data.haystack[p // repeats] for p in self._streams.first(
            (picks, labels), ("picks", pool * repeats), size,
            lambda: permutation_stream(random.Random(picks), pool * repeats))]
        ids = self._ids((picks, labels), labels, size)
        examples = rng.sample(range(size), self.fewshot)
        at = below(rng, size + 1)  # random.randint(0, n)
        items = [*zip(picked, ids[:size])]
        items.insert(at, (needle, ids[size]))
        asked = ids[size]
        # the asked question is the nth with its id in context order
        nth = sum(i == asked for _, i in items[:at + 1])
        problem = self.problem.format(
            i=asked, order=ORDER.format(ordinal=ordinal(nth)) if self.num_order else "")
        example = self._examples([items[e if e < at else e + 1] for e in examples])
        head = self.instruction + "\n\n"
        tail = "\n\n" + "".join(example) + problem
        lines = [MMLU_QUESTION.format(i=i, question=q.text) for q, i in items]
        text, pieces = assemble(head, lines, [*example, problem])
        starts = list(itertools.accumulate((len(line) + 2 for line in lines[:-1]),
                                           initial=len(head)))
        # niah asks for every question with the id; the others for the test question
        gold = [k for k, (_, i) in enumerate(items) if i == asked] \
            if self.task_type == "niah" else [at]
        if self.task_type == "solve":
            outputs: Sequence[str] = (needle.letter,)
        else:
            outputs = tuple(items[k][0].text for k in gold)
        return Draft(input=text, answer_prefix="", outputs=tuple(outputs),
                     gold_spans=tuple((starts[k], starts[k] + len(lines[k])) for k in gold),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces, refine=split_ids)

    def _examples(self, chosen: list[tuple[Question, str]]) -> list[str]:
        """The few-shot block (solve tasks) in its lines and examples, each ending in its
        blank line: each example is the problem for one of the haystack questions and its
        solution."""
        if not chosen:
            return []
        tail = MMLU_EXAMPLE_TAIL[self.algo_type]
        shots = [self.problem.format(i=i, order="")
                 + tail.format(i=i, question=q.text, solution=MMLU_SOLUTION.format(letter=q.letter))
                 for q, i in chosen]
        opening, closing = FEWSHOT.split("{examples}")
        return [opening, *(shot + "\n\n" for shot in shots[:-1]), shots[-1] + closing]


# --- checks ----------------------------------------------------------------------------------

_ITEM = re.compile(r"^Question ([0-9]{7}): (.*)$", re.M)
_ASKED = re.compile(r"Question ([0-9]{7}) from the context")
_ORDINAL = re.compile(r"([0-9]+)(?:st|nd|rd|th) \(1 indexed\) Question")
_EXAMPLES = "\n\n" + FEWSHOT[:FEWSHOT.index("{examples}")]


@dataclass(frozen=True)
class Parsed:
    items: list[tuple[str, str, int]]  # (id, text, start) of each question in the context
    asked: str
    gold: list[int]  # the items the answer is read from
    context: tuple[int, int]


def parse(row: Mapping) -> Parsed | str:
    """A row's questions, the asked id and the gold items, read off its input."""
    from ruler.catalog.tasks import get_task

    text = row["input"]
    problem_at = text.rfind("\n\n")  # the problem is the last paragraph
    asked = _ASKED.findall(text, problem_at)
    if problem_at < 0 or not asked:
        return "cannot find the problem and the asked question's id"
    examples = text.find(_EXAMPLES)
    end = examples if examples >= 0 else problem_at
    start = text.find("\n\n") + 2
    items = [(m.group(1), m.group(2), m.start()) for m in _ITEM.finditer(text, start, end)]
    same = [k for k, (i, _, _) in enumerate(items) if i == asked[-1]]
    nth = _ORDINAL.search(text, problem_at)
    if nth is not None:
        n = int(nth.group(1))
        same = same[n - 1:n]
    elif get_task(row["task"]).params["task_type"] != "niah":
        same = same[:1] if len(same) == 1 else []
    if not same:
        return f"the asked Question {asked[-1]} is not (once) in the context"
    return Parsed(items, asked[-1], same, (start, end))


def check_row(row: Mapping) -> str | None:
    """`outputs` are read off the asked question(s): the text (retrieve), every text with
    the asked id, in order (niah), one letter A-D (solve: the letter itself is the source's
    fact, not the row's)."""
    parsed = parse(row)
    if isinstance(parsed, str):
        return parsed
    outputs = list(row["outputs"])
    if row["metric"] == "multichoice":
        return None if len(outputs) == 1 and outputs[0] in LETTERS else \
            f"outputs {outputs} are not one letter A-D"
    texts = [parsed.items[k][1] for k in parsed.gold]
    return None if texts == outputs else \
        f"Question {parsed.asked} in the context reads {texts}, outputs are {outputs}"


def gold_spans(row: Mapping, generator=None):
    """The asked question's item(s), and the context between the instruction and the
    examples or the problem."""
    parsed = parse(row)
    if isinstance(parsed, str):
        return parsed
    return [parsed.items[k][2] for k in parsed.gold], parsed.context


# One generator, three families: one per metric (catalog: `_ruler2_family`).
FAMILY, FAMILY_2STEPS, FAMILY_CHOICE = (
    TaskFamily(spec=spec, generator=Ruler2MmluGenerator, check_row=check_row,
               gold_spans=gold_spans)
    for spec in (RULER2_MMLU, RULER2_MMLU_2STEPS, RULER2_MMLU_CHOICE))
