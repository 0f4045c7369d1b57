"""QA rows (`paper-analysis.md` §4.3 qa, §4.4 QA modes).

The documents are what the template puts between "The following are given documents." and
the repeated instruction; each opens with "Document i:". The gold documents are those that
hold a reference (SQuAD-normalised), which the row itself shows. The coincidence with the
no-context answer needs a second run and is found by the report
(`ruler.benchmarks.ruler.failure_modes.report`), from each row's normalised answer and question that
scores.json keeps (`question_key`)."""

from __future__ import annotations

import hashlib
import re

from ruler.benchmarks.ruler.failure_modes.base import Answer, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.text import squad_norm
from ruler.benchmarks.ruler.tasks import QA

_HEAD = QA.template[:QA.template.index("{context}")]
_TAIL = QA.template[QA.template.index("{context}") + len("{context}"):]
_TAIL_HEAD = _TAIL[:_TAIL.index("{query}")]  # the repeated instruction and "Question: "
_DOC = re.compile(r"(?:^|\n\n)Document \d+:\n")
_QUESTION_AT = _TAIL_HEAD.strip("\n").split("\n")[-1]  # "Question: "


def documents_text(text: str) -> str:
    """The row's documents as the input holds them (between the template's head and its
    repeated instruction)."""
    start = text.find(_HEAD)
    start = start + len(_HEAD) if start >= 0 else 0
    end = text.rfind(_TAIL_HEAD)
    return text[start:end if end >= start else len(text)]


def documents(body: str) -> list[str]:
    """The documents of `documents_text`, each without its "Document i:" header."""
    return [d for d in _DOC.split(body) if d.strip()]


def question_key(text: str) -> str:
    """A digest of the row's question (the input from its last "Question:"): equal in a row
    and its --no-context twin, whose documents alone are cut. The report pairs the two runs'
    answers by row index and refuses pairs whose questions differ."""
    at = text.rfind(_QUESTION_AT)
    return hashlib.sha256(text[max(at, 0):].encode()).hexdigest()[:16]


def label(row: LabelRow, ans: Answer, found: Found) -> None:
    norm = squad_norm(ans.text)
    found.add("empty", not norm)
    if not norm:
        return
    body = documents_text(row.input)
    if norm not in squad_norm(body):
        found.add("not_in_context")
        return  # in no document either: nothing more to look for
    docs = [squad_norm(d) for d in documents(body)]
    refs = [r for r in (squad_norm(o) for o in row.outputs) if r]
    gold = [d for d in docs if any(r in d for r in refs)]
    others = [d for d in docs if not any(r in d for r in refs)]
    found.add("distractor_document", any(norm in d for d in others)
              and not any(norm in d for d in gold))
