"""RULERv2's HotpotQA tasks (qa_basic/easy/medium/hard): paragraphs as documents under 7-digit
ids, one `validation` question's paragraphs among them.

Upstream (`prepare_qa.py`, HotpotQA distractor): a document is `title + "\\n" + the sentences
joined`; the haystack is every distinct paragraph of `train`; sample i is validation question
i, whose supporting paragraphs (their titles are in `supporting_facts`) and distractor
paragraphs join `n` paragraphs drawn from the haystack (each repeated ceil(n / left) times in
the pool when n exceeds what is left), all under ids, shuffled. qa_basic gives the first
supporting paragraph's text and asks for its id; qa_easy gives the question and asks for the
supporting paragraphs' ids; qa_medium and qa_hard ask for the answer.

Differences (the card's "Differences from upstream"): the haystack is in a fixed order (sorted)
where upstream's `list(set(...))` follows the process's string hash seed, so its rows change
with PYTHONHASHSEED; the question's own paragraphs are never drawn again into the haystack
(upstream only subtracts their count, so a gold paragraph can appear twice under two ids and a
correct index then scores wrong); ids are distinct (`ruler2_items`).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import Mapping

from ruler.benchmarks.ruler2.items import (
    SampleStreams,
    aimed_step,
    assemble,
    id_stream,
    permutation_stream,
    split_ids,
)
from ruler.benchmarks.ruler2.prompts import QA_CONTEXT, QA_DOCUMENT, QA_PARAGRAPH, QA_PROBLEM
from ruler.benchmarks.ruler2.tasks import RULER2_QA
from ruler.catalog.base import Draft, TaskGenerator
from ruler.catalog.family import TaskFamily
from ruler.catalog.hub_sources import read_split
from ruler.catalog.tasks import get_task
from ruler.kernel.errors import RulerError

COLUMNS = ("question", "answer", "supporting_facts", "context")


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    support: tuple[str, ...]  # paragraphs whose titles are supporting facts, in context order
    distractors: tuple[str, ...]  # the other paragraphs


@dataclass(frozen=True)
class HotpotData:
    documents: tuple[str, ...]  # every distinct train paragraph, sorted
    index: Mapping[str, int]
    questions: tuple[Question, ...]


def _paragraphs(row: Mapping) -> list[tuple[str, str]]:
    context = row["context"]
    return [(t, QA_PARAGRAPH.format(title=t, body="".join(s)))
            for t, s in zip(context["title"], context["sentences"])]


def read_hotpotqa(source) -> HotpotData:
    try:
        train = read_split(source, "train", ("context",))
        documents = tuple(sorted({p for row in train for _, p in _paragraphs(row)}))
        questions = []
        for row in read_split(source, "validation", COLUMNS):
            titles = set(row["supporting_facts"]["title"])
            paragraphs = _paragraphs(row)
            questions.append(Question(
                row["question"], row["answer"],
                tuple(p for t, p in paragraphs if t in titles),
                tuple(p for t, p in paragraphs if t not in titles)))
    except (KeyError, TypeError) as e:
        raise RulerError(f"source {source.spec.id!r}: not HotpotQA's distractor schema "
                         f"({type(e).__name__}: {e})") from None
    return HotpotData(documents, {d: i for i, d in enumerate(documents)}, tuple(questions))


class Ruler2QaGenerator(TaskGenerator):
    unit = "haystack documents"

    @property
    def calibration_step(self) -> int:
        return aimed_step(self.max_seq_length, 150, 5)  # a document is about 150 tokens

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        self.task_type = p["task_type"]
        self.kind = p["query_type"] if self.task_type == "retrieve" else p["algo_type"]
        self.instruction = QA_CONTEXT[(self.task_type, self.kind)]
        self.problem = QA_PROBLEM[(self.task_type, self.kind)]
        source = ctx.source("hotpotqa_hub")
        self.data: HotpotData = ctx.resource(f"ruler2-hotpotqa:{source.path}",
                                             lambda: read_hotpotqa(source), content=source.sha256)
        self._streams = SampleStreams()

    #: The four tasks draw the same paragraphs: their counts are made once for all four.
    count_scope = "ruler2:hotpotqa"

    def check_samples(self, num_samples: int) -> None:
        if num_samples > len(self.data.questions):
            raise RulerError(f"task {self.spec.name}: the HotpotQA validation split has "
                             f"{len(self.data.questions):,} questions; --samples "
                             f"{num_samples:,} asks for more")

    def question(self, index: int) -> Question:
        q = self.data.questions[index]
        if not q.support:
            raise RulerError(f"task {self.spec.name}: HotpotQA validation question {index} "
                             f"has no supporting paragraph")
        return q

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        q = self.question(index)
        own = [*q.support, *q.distractors]
        docs = self.data.documents
        taken = {self.data.index[p] for p in own if p in self.data.index}
        left = len(docs) - len(taken)
        if left <= 0:
            raise RulerError(f"task {self.spec.name}: no haystack paragraphs are left besides "
                             f"question {index}'s own")
        repeats = math.ceil(size / left) if size > left else 1
        exclude = {d * repeats + r for d in taken for r in range(repeats)}
        # Documents and ids from streams of their own: a larger draft of the sample holds the
        # smaller one's documents under the same ids, so the fitter's drafts share them.
        picks, labels = rng.getrandbits(64), rng.getrandbits(64)
        streams = self._streams
        picked = [docs[p // repeats] for p in streams.first(
            picks, ("picks", repeats), size,
            lambda: permutation_stream(random.Random(picks), len(docs) * repeats, exclude))]
        ids = streams.first(picks, "ids", len(own) + size,  # the question's own first
                            lambda: id_stream(random.Random(labels)))
        entries = [*zip(own, ids), *zip(picked, ids[len(own):])]
        order = list(range(len(entries)))
        rng.shuffle(order)
        lines = [QA_DOCUMENT.format(i=entries[k][1], text=entries[k][0]) for k in order]
        gold_at = [slot for slot, k in enumerate(order) if k < len(q.support)]
        support_ids = ids[:len(q.support)]
        if self.task_type == "retrieve":
            problem = self.problem.format(text=q.support[0], question=q.question)
            outputs = (support_ids[0],) if self.kind == "doc" else tuple(support_ids)
        else:
            problem = self.problem.format(question=q.question)
            outputs = (q.answer,)
        head, tail = self.instruction + "\n\n", "\n\n" + problem
        text, pieces = assemble(head, lines, [problem])
        starts = list(itertools.accumulate((len(line) + 2 for line in lines[:-1]),
                                           initial=len(head)))
        if self.kind == "doc":  # the text given is the first supporting paragraph
            gold_at = [slot for slot, k in enumerate(order) if k == 0]
        return Draft(input=text, answer_prefix="", outputs=outputs,
                     gold_spans=tuple((starts[s], starts[s] + len(lines[s])) for s in gold_at),
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces, refine=split_ids)


# --- checks ----------------------------------------------------------------------------------

_DOCUMENT = re.compile(r"(?:^|\n\n)Document ([0-9]{7}):\n")


def _documents(text: str, end: int) -> list[tuple[str, int, int]]:
    """(id, start of "Document", start of its text) of each document before `end`."""
    return [(m.group(1), m.start() + (2 if m.group(0).startswith("\n") else 0), m.end())
            for m in _DOCUMENT.finditer(text, 0, end)]


def _bodies(text: str, docs: list[tuple[str, int, int]], end: int) -> list[str]:
    """Each document's text: up to the blank line before the next one, the last up to `end`."""
    return [text[b:(docs[k + 1][1] - 2 if k + 1 < len(docs) else end)]
            for k, (_, _, b) in enumerate(docs)]


def _problem_start(row: Mapping) -> int:
    """Where the problem begins (its blank line): the problem may hold a paragraph
    (qa_basic), so it is found by its task's fixed opening, not by the last blank line."""
    params = get_task(row["task"]).params
    problem = QA_PROBLEM[(params["task_type"], params.get("query_type") or params["algo_type"])]
    return row["input"].rfind("\n\n" + problem[:problem.index("{")])


def check_row(row: Mapping) -> str | None:
    """Retrieve tasks: each output is the id of exactly one document, and for qa_basic that
    document holds the text given (no second copy under another id). Solve tasks: an answer
    is in some document (yes/no answers aside), as v1's qa."""
    text = row["input"]
    kind = get_task(row["task"]).params
    end = _problem_start(row)
    docs = _documents(text, end)
    if end < 0 or not docs:
        return "cannot find the documents and the problem"
    ids = [i for i, _, _ in docs]
    if kind["task_type"] == "retrieve":
        outputs = list(row["outputs"])
        if not outputs or any(ids.count(o) != 1 for o in outputs):
            return f"outputs {outputs} are not each the id of one document"
        if kind["query_type"] == "doc":
            given = text[end + len("\n\nText: "):text.rfind("\nMost relevant document index:")]
            holding = [ids[k] for k, body in enumerate(_bodies(text, docs, end)) if body == given]
            if holding != outputs:
                return f"the text given is document(s) {holding}, outputs are {outputs}"
        return None
    answers = [o.casefold() for o in row["outputs"]]
    if any(a in text[:end].casefold() for a in answers) or \
            all(a.strip() in ("yes", "no") for a in answers):
        return None
    return "no document contains the answer"


def gold_spans(row: Mapping, generator=None):
    """The gold documents: the first supporting paragraph (qa_basic), or every supporting
    paragraph, which only the source tells (the generator's data) for the solve tasks; and
    the documents' span."""
    text = row["input"]
    end = _problem_start(row)
    docs = _documents(text, end)
    if end < 0 or not docs:
        return "cannot find the documents and the problem"
    context = (docs[0][1], end)
    params = get_task(row["task"]).params
    if params["task_type"] == "retrieve":
        return [s for i, s, _ in docs if i in set(row["outputs"])], context
    if generator is None:
        return "needs the task's source to know the question's supporting paragraphs"
    support = set(generator.question(row["index"]).support)
    bodies = _bodies(text, docs, end)
    return [docs[k][1] for k, body in enumerate(bodies) if body in support], context


FAMILY = TaskFamily(spec=RULER2_QA, generator=Ruler2QaGenerator,
                    check_row=check_row, gold_spans=gold_spans,
                    needs_generator=True)
