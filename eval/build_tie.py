"""Whether a prediction was made from the very row it is scored against.

A prediction's key (config, task, L, index) names a row, but every build of a config has rows
with those keys: a rebuild with another seed, an older revision. Scored against the wrong one,
correct answers look wrong, and nothing in the numbers says so. So each prediction is tied to
the build by whatever it carries of the row it was made from, strongest first:

- `data_sha256`: the content_sha256 of the split file (`ruler eval` writes it into every
  record; lm-eval samples get it from the exported task's metadata in the run's results file;
  the Inspect task keeps it in each sample's metadata);
- the prompt: `input_sha256`, the sha256 of the row's `input` (UTF-8), or `input` itself (the
  readers of lm-eval samples and Inspect logs take it from the logged doc or sample input);
- `length`: the row's prompt length in tokens, as the build counted it. A length that differs
  proves another build; an equal one proves little (rows of two seeds often have the same
  length: a vt row's is nearly fixed), so a row tied by nothing else stays unverified.

Anything carried that differs from the row is a mismatch: the prediction was made from other
rows, and scoring refuses it. A prediction tied by neither its data_sha256 nor its prompt is
unverified: it is scored, and counted and said as such (`ruler score --strict` fails on it).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

#: What ties a prediction to its row, strongest first (the names scores.json counts).
TIE_KINDS = ("data_sha256", "prompt")
#: What scores.json counts of unverified rows that carry an equal length and nothing more.
LENGTH_ONLY = "length"
#: The optional record fields that tie a prediction to its row.
TIE_FIELDS = ("data_sha256", "input_sha256", "input", "length")


def prompt_digest(text: str) -> str:
    """The sha256 of a row's `input`, as `input_sha256` carries it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def carried_digest(record: Mapping[str, Any]) -> str | None:
    """The prompt digest a record carries (`input_sha256`, else that of `input`), if any."""
    if record.get("input_sha256"):
        return record["input_sha256"]
    text = record.get("input")
    return prompt_digest(text) if isinstance(text, str) else None


def tie(record: Mapping[str, Any], content_sha256: str, row: Mapping[str, Any],
        row_digest: str | None) -> tuple[str | None, str | None]:
    """(how the record is tied to `row`: a TIE_KINDS name, LENGTH_ONLY when only an equal
    length is carried, else None; why it is not that row's, or None).

    `row_digest`: the row's prompt digest, when the record carries one to compare with."""
    kinds, wrong = [], []
    sha = record.get("data_sha256")
    if sha:
        if sha == content_sha256:
            kinds.append("data_sha256")
        else:
            wrong.append(f"data_sha256 {sha[:12]}, the data has {content_sha256[:12]}")
    digest = carried_digest(record)
    if digest is not None:
        if digest == row_digest:
            kinds.append("prompt")
        else:
            wrong.append("its prompt differs from the row's")
    length = record.get("length")
    if length is not None:
        if length == row.get("length"):
            kinds.append(LENGTH_ONLY)
        else:
            wrong.append(f"length {length}, the row's is {row.get('length')}")
    return (kinds[0] if kinds else None), ("; ".join(wrong) or None)
