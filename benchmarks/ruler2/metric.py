"""NeMo-Skills' `ruler2` metric: how RULERv2's string tasks score one generation.

Upstream: NVIDIA-NeMo/Skills `nemo_skills/evaluation/evaluator/ruler.py::eval_ruler2` (read at
commit 2c6b9e32bbb1c40d822f6f8a79b7ef317ce43310; notes/ruler2.md §6). Per reference r, on the
lower-cased prediction and reference:

    s(r) = max(1.0 if r in prediction else 0.0, 1 - WER(prediction, r))

with WER = word-level edit distance (`str.split()` words) / the reference's word count, and
infinite for a reference without words. `1 - WER` can be negative (a prediction much longer
than the reference); the max with the substring term keeps s(r) in [0, 1]. The match types:

- all: the mean of s(r) over the references;
- 2steps: the same on the text after the prediction's last blank line ("\\n\\n");
- part: every copied document (`Document N:` up to the next blank line) removed, then the
  max of s(r) over the references.

Upstream scores the raw `generation`: its post-processing is the identity (an older version
cut at `</think>` and `Answer:`; notes/ruler2.md §9.13), so nothing is stripped here. These are
plain functions over the standard library: `ruler export lm-eval` copies their source.
"""

from __future__ import annotations

import re
from typing import Sequence

# A copied document: "Document 12:" and every following line, lazily, up to the first empty
# line. Without a blank line after it (a document copied at the very end) nothing is removed.
DOCUMENT_BLOCK = re.compile(r"Document \d+:(?:.*\n)+?\n")


def word_edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two word lists (insertion, deletion, substitution: 1
    each): the number upstream's `editdistance.eval` gives for them."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def word_error_rate(hypothesis: str, reference: str) -> float:
    """Word edit distance over the reference's word count; infinity for a reference without
    words (upstream's `float('inf')`)."""
    ref_words = reference.split()
    if not ref_words:
        return float("inf")
    return 1.0 * word_edit_distance(hypothesis.split(), ref_words) / len(ref_words)


def reference_score(prediction: str, reference: str) -> float:
    """s(r): max(substring match, 1 - WER), case-insensitive."""
    pred, ref = prediction.lower(), reference.lower()
    if ref in pred:
        return 1.0  # 1 - WER is at most 1
    ref_words, hyp_words = ref.split(), pred.split()
    # The distance is at least the difference in word counts, so a hypothesis with twice the
    # reference's words (or more) has WER >= 1: s(r) is the substring term, 0. This skips the
    # quadratic edit distance for the long generations of reasoning models.
    if not ref_words or len(hyp_words) >= 2 * len(ref_words):
        return 0.0
    return max(0.0, 1 - 1.0 * word_edit_distance(hyp_words, ref_words) / len(ref_words))


def _references(references: Sequence[str]) -> Sequence[str]:
    if not references:
        raise ValueError("a ruler2 row needs at least one reference")
    return references


def ruler2_all(prediction: str, references: Sequence[str]) -> float:
    """match_type all: the mean of s(r) over the references."""
    refs = _references(references)
    return sum(reference_score(prediction, r) for r in refs) / len(refs)


def ruler2_2steps(prediction: str, references: Sequence[str]) -> float:
    """match_type 2steps: `all` on the text after the last blank line (all of it if none)."""
    return ruler2_all(prediction.split("\n\n")[-1], references)


def ruler2_part(prediction: str, references: Sequence[str]) -> float:
    """match_type part: copied `Document N:` blocks removed, then the best reference."""
    remaining = DOCUMENT_BLOCK.sub("", prediction)
    return max(reference_score(remaining, r) for r in _references(references))
