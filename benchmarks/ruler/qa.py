"""Question answering over many documents: qa_1 (SQuAD v2.0 dev), qa_2 (HotpotQA dev distractor).

Upstream (`qa.py`):
- documents are the sorted, de-duplicated paragraphs of the whole file (HotpotQA:
  f"{title}\\n{''.join(sentences)}");
- questions are taken in file order (SQuAD: answerable ones only); a question's own documents
  (SQuAD: its paragraph; HotpotQA: all its context paragraphs) come first, then distractors:
  SQuAD first takes other paragraphs of the same article, then other documents at random;
  from `len(documents)` on, the whole document list is repeated and cut instead;
- the list is shuffled with a fresh `random.Random(seed)`, whose permutation depends only on
  the number of documents, so the gold document sits in the same slot for every sample with
  that many documents. Reproduced here with the build seed, to keep upstream's positions;
- documents are written "Document i:\\n<text>" joined by a blank line.

In a depth-swept build the gold documents leave their slots and go, as one block, where the
mean of their starts lies in the sample's depth bin (catalog.placement); the other
documents keep upstream's order. Past the source's documents (a list repeated) every
occurrence of a gold document is gold, and all of them go in the block.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from ruler.benchmarks.ruler.tasks import QA
from ruler.catalog.base import Draft, TaskGenerator, end_with_tail, template_ends
from ruler.catalog.depths import DepthBin
from ruler.catalog.family import DepthItem, TaskFamily
from ruler.catalog.placement import document_order, token_weights
from ruler.catalog.sampling import permutation_prefix
from ruler.kernel.errors import RulerError

DOCUMENT = "Document {i}:\n{document}"
DOC_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Question:
    query: str
    outputs: tuple[str, ...]
    docs: tuple[int, ...]         # the question's own documents (placed first, as upstream)
    gold: frozenset[int]          # documents holding the answer (SQuAD: its paragraph;
                                  # HotpotQA: the supporting-fact paragraphs)
    more: tuple[int, ...] = ()    # SQuAD: the other paragraphs of the same article


@dataclass(frozen=True)
class QASet:
    path: Path
    dataset: str
    questions: tuple[Question, ...]
    docs: tuple[str, ...]

    @cached_property
    def clean_start(self) -> tuple[bool, ...]:
        """Per document: it starts with a non-space (a clean junction after its header)."""
        return tuple(bool(d) and not d[0].isspace() for d in self.docs)


def _bad(path: Path, dataset: str, why: str) -> RulerError:
    expected = {"squad": "SQuAD v2.0 (dev-v2.0.json: {\"data\": [{\"paragraphs\": "
                         "[{\"context\", \"qas\"}]}]})",
                "hotpotqa": "HotpotQA (hotpot_dev_distractor_v1.json: a list of {\"question\", "
                            "\"answer\", \"context\": [[title, [sentences]]]})"}[dataset]
    return RulerError(f"{path}: not a {expected} file: {why}")


def _load_json(path: Path, dataset: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, dataset, f"cannot read it as JSON ({e})") from None


def read_squad(path: Path) -> QASet:
    data = _load_json(path, "squad")
    try:
        articles = data["data"]
        paragraphs = [[p["context"] for p in a["paragraphs"]] for a in articles]
        if not isinstance(articles, list) or not all(isinstance(c, str)
                                                      for ps in paragraphs for c in ps):
            raise TypeError("paragraph contexts must be strings")
        docs = tuple(sorted({c for ps in paragraphs for c in ps}))
        index = {d: i for i, d in enumerate(docs)}
        questions = []
        for a in articles:
            article_docs = [index[p["context"]] for p in a["paragraphs"]]
            for p in a["paragraphs"]:
                own = index[p["context"]]
                for qa in p["qas"]:
                    if qa["is_impossible"]:
                        continue
                    questions.append(Question(
                        query=qa["question"],
                        outputs=tuple(ans["text"] for ans in qa["answers"]),
                        docs=(own,), gold=frozenset({own}),
                        more=tuple(i for i in article_docs if i != own)))
    except (KeyError, TypeError, AttributeError) as e:
        raise _bad(path, "squad", f"missing or malformed field ({type(e).__name__}: {e})") \
            from None
    return QASet(path, "squad", tuple(questions), docs)


def read_hotpotqa(path: Path) -> QASet:
    data = _load_json(path, "hotpotqa")
    try:
        if not isinstance(data, list):
            raise TypeError("the top level must be a list of questions")
        texts = [[(t, f"{t}\n{''.join(sents)}") for t, sents in d["context"]] for d in data]
        docs = tuple(sorted({doc for ts in texts for _, doc in ts}))
        index = {d: i for i, d in enumerate(docs)}
        questions = []
        for d, ts in zip(data, texts):
            own = tuple(index[doc] for _, doc in ts)
            titles = {fact[0] for fact in d.get("supporting_facts") or ()}
            gold = frozenset(index[doc] for t, doc in ts if t in titles) or frozenset(own)
            if not isinstance(d["question"], str) or not isinstance(d["answer"], str):
                raise TypeError("question and answer must be strings")
            questions.append(Question(query=d["question"], outputs=(d["answer"],), docs=own,
                                      gold=gold))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _bad(path, "hotpotqa", f"missing or malformed field ({type(e).__name__}: {e})") \
            from None
    return QASet(path, "hotpotqa", tuple(questions), docs)


READERS = {"squad": read_squad, "hotpotqa": read_hotpotqa}


@lru_cache(maxsize=4096)
def fixed_permutation(seed: int, n: int) -> tuple[int, ...]:
    """Upstream's `random.Random(seed).shuffle(docs)` as an index map: slot i gets docs[p[i]].

    shuffle's swaps depend only on the list length, so the map is the same for any contents.
    """
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return tuple(order)


class QAGenerator(TaskGenerator):
    unit = "documents"
    calibration_step = 10  # upstream's `incremental`

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        self.family = spec.family
        self.dataset = spec.params["dataset"]
        if self.dataset not in READERS:
            raise RulerError(f"task {spec.name}: unknown QA dataset {self.dataset!r}")
        source = ctx.source(self.dataset)
        self.data: QASet = ctx.resource(f"qa:{self.dataset}:{source.path}",
                                        lambda: READERS[self.dataset](Path(source.path)),
                                        content=source.sha256)
        self.official = source.official
        if not self.data.questions or not self.data.docs:
            raise _bad(self.data.path, self.dataset, "it holds no usable questions")

    @property
    def min_size(self) -> int:
        # A question's own documents always go in (HotpotQA: 10 paragraphs).
        return max(len(q.docs) for q in self.data.questions)

    def check_samples(self, num_samples: int) -> None:
        available = len(self.data.questions)
        if num_samples > available:
            kind = "answerable questions" if self.dataset == "squad" else "questions"
            partial = "" if self.official else " (a partial, non-official copy)"
            raise RulerError(
                f"task {self.spec.name}: {self.data.path}{partial} has {available} {kind}; "
                f"--samples {num_samples} asks for more. Use --samples <= {available} or the "
                f"official file.")

    def _documents(self, q: Question, rng: random.Random, size: int) -> list[int]:
        """The document ids before the fixed permutation, in upstream's order."""
        n_docs = len(self.data.docs)
        if size >= n_docs:
            return [i % n_docs for i in range(size)]  # whole list repeated, then cut
        need = size - len(q.docs)
        if need <= len(q.more):
            return [*q.docs, *(q.more[i] for i in permutation_prefix(rng, len(q.more), need))]
        taken = set(q.docs) | set(q.more)
        rest = permutation_prefix(rng, n_docs, need - len(q.more), exclude=taken)
        return [*q.docs, *q.more, *rest]

    def _headers(self, n: int) -> list[str]:
        """"Document 1:\n", ...: cached, so the pieces of every draft share these strings."""
        headers = self.__dict__.setdefault("_header_cache", [])
        headers.extend(DOCUMENT.format(i=i + 1, document="")
                       for i in range(len(headers), n))
        return headers

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        q = self.data.questions[index]
        chosen = self._documents(q, rng, size)
        perm = fixed_permutation(self.ctx.seed, len(chosen))
        ordered = [chosen[p] for p in perm]
        headers = self._headers(len(ordered))
        swept = self.depth_bin(index)
        if swept is not None:
            ordered = self._gold_block_in(swept, ordered, q.gold, headers)
        head, tail = template_ends(self.family.template, query=q.query)
        docs, cut_before = self.data.docs, self.data.clean_start
        # The text is head + "\n\n".join("Document i:\n" + doc) + tail, cut into pieces after
        # each separator and, where the document starts with a non-space, after its header.
        pieces, gold, pos = [head], [], len(head)
        for i, doc_id in enumerate(ordered):
            if i:
                pieces[-1] += DOC_SEPARATOR
                pieces.append(headers[i])
                pos += len(DOC_SEPARATOR)
            else:
                pieces[-1] += headers[i]
            doc = docs[doc_id]
            if cut_before[doc_id]:
                pieces.append(doc)
            else:
                pieces[-1] += doc
            end = pos + len(headers[i]) + len(doc)
            if doc_id in q.gold:
                gold.append((pos, end))
            pos = end
        end_with_tail(pieces, tail)
        text = "".join(pieces)
        # From len(docs) documents on, the list is repeated (upstream): every occurrence of a
        # gold document is gold above; the repeats are reported as repeated material.
        repeated = sum(len(docs[d]) for d in chosen[len(docs):])
        return Draft(input=text, answer_prefix=self.family.answer_prefix, outputs=q.outputs,
                     gold_spans=tuple(gold), context_span=(len(head), len(text) - len(tail)),
                     size=size, pieces=tuple(pieces), repeated_chars=repeated)

    def _gold_block_in(self, swept: DepthBin, ordered: list[int], gold: frozenset[int],
                       headers: list[str]) -> list[int]:
        """`ordered` with its gold documents moved, as one block, to where the mean of their
        starts lies in `swept` (see placement.document_order)."""
        docs = self.data.docs
        weigh = token_weights(self.ctx)
        n = len(ordered)
        weight = dict(zip(ordered, weigh([docs[d] for d in ordered], ":\n")))
        rest = [d for d in ordered if d not in gold]
        block = [d for d in ordered if d in gold]
        separator = weigh([DOC_SEPARATOR], ".")[0]  # after a document's last sentence
        fixed = [w + (separator if k < n - 1 else 0)
                 for k, w in enumerate(weigh(headers[:n], DOC_SEPARATOR))]
        order, block_order, j = document_order(
            [weight[d] for d in rest], [weight[d] for d in block], fixed, swept)
        rest, block = [rest[i] for i in order], [block[t] for t in block_order]
        return [*rest[:j], *block, *rest[j:]]


# --- answer check ---------------------------------------------------------------------------

_DOC_HEAD = re.compile(r"(?:^|\n\n)Document (\d+):\n")
# The template's text before the documents, and after them up to the question.
_HEAD, _TAIL = QA.template.split("{context}")
_TAIL_HEAD = _TAIL[:_TAIL.index("{query}")]


def check_row(row: Mapping) -> str | None:
    """The documents are well formed and one of them contains an answer verbatim.

    HotpotQA comparison questions answered "yes"/"no" cannot be read off verbatim; for those
    only the document structure is checked.
    """
    text: str = row["input"]
    if not text.startswith(_HEAD):
        return "task text not found"
    end = text.rfind(_TAIL_HEAD)
    if end < 0:
        return "question not found"
    context = text[len(_HEAD):end]
    heads = list(_DOC_HEAD.finditer(context))
    if not heads or [int(m.group(1)) for m in heads] != list(range(1, len(heads) + 1)):
        return "documents are not numbered 1..n"
    outputs = list(row["outputs"])
    if not outputs or not text[end + len(_TAIL_HEAD):].strip():
        return "empty question or answers"
    # verbatim first: case folding maps character by character, so an answer found as it is
    # is found folded too (the build's workers check every row: folding 128K tokens costs)
    if any(o in context for o in outputs):
        return None
    folded = context.casefold()
    if any(o.casefold() in folded for o in outputs):
        return None
    if all(o.strip().casefold() in ("yes", "no") for o in outputs):
        return None
    return "no document contains any of the answers"


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """Where the question's gold documents start (their "Document i:" headers) and the
    documents' span. Which documents are gold is the dataset's fact, not the row's: it is
    read from the generator's data (the pinned source) for the row's question."""
    if generator is None:
        return "needs the task's source to know the question's gold documents"
    text: str = row["input"]
    end = text.rfind(_TAIL_HEAD)
    if not text.startswith(_HEAD) or end < 0:
        return "task text not found"
    data = generator.data
    q = data.questions[row["index"]]
    gold = {data.docs[d] for d in q.gold}
    offsets = [m.start() + (0 if m.group(0).startswith("Document") else len(DOC_SEPARATOR))
               for m in _DOC_HEAD.finditer(text, len(_HEAD) - len(DOC_SEPARATOR), end)
               if any(text.startswith(doc, m.end()) for doc in gold)]
    return offsets, (len(_HEAD), end)


# --- depth ----------------------------------------------------------------------------------

def gold_block_depth(depths: Sequence[float]) -> list[float]:
    """The depth a depth-swept build places, from a row's recorded gold depths: the mean of
    the gold documents' starts (one document for SQuAD; HotpotQA's two supporting documents
    sit side by side, and together they can be longer than a bin)."""
    return [sum(depths) / len(depths)] if depths else []


def describe_block_depth(placed: Sequence[float]) -> str:
    return f"mean gold document depth {round(placed[0], 4)}" if placed else "no gold depth"


def depth_items(row: Mapping) -> list[DepthItem]:
    """One item at the mean depth of the gold documents (the depth a swept build places),
    scored on the row's answers (string_match_part has no per-document hit)."""
    placed = gold_block_depth(row.get("gold_depths") or ())
    return [DepthItem(placed[0], tuple(row["outputs"]))] if placed else []


FAMILY = TaskFamily(
    spec=QA, generator=QAGenerator, check_row=check_row, gold_spans=gold_spans,
    needs_generator=True, sweepable=True, placed_depths=gold_block_depth,
    describe_placed=describe_block_depth, depth_items=depth_items)
