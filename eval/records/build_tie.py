"""Whether a prediction was made from the very row it is scored against (docs/scoring.md,
"Each prediction tied to its row of the build").

A prediction's key (config, task, L, index) names a row, but every build of a config has rows
with those keys: a rebuild with another seed, an older revision. Scored against the wrong one,
correct answers look wrong, and nothing in the numbers says so. So each prediction is tied to
the build by whatever it carries of its row, strongest first (`TIE_KINDS`): `data_sha256` (the
split file's content_sha256), the prompt (`input_sha256` or `input`, in any form a prompt is
legitimately sent in: `prompt_forms`), and `length`, which proves another build when it differs
but little when it is equal (rows of two seeds often share it). Anything carried that differs
is a mismatch that scoring refuses, saying which field differs and how (`describe_prompt`); a
prediction tied by neither its data_sha256 nor its prompt is unverified: scored, and counted
and said as such.
"""

from __future__ import annotations

import hashlib
from os.path import commonprefix
from typing import Any, Mapping

#: What ties a prediction to its row, strongest first (the names scores.json counts).
TIE_KINDS = ("data_sha256", "prompt")
#: What scores.json counts of unverified rows that carry an equal length and nothing more.
LENGTH_ONLY = "length"
#: What `tie` says of a carried prompt that is none of the row's forms (`describe_prompt`
#: says how, where the row's text is read).
PROMPT_DIFFERS = "its prompt differs from the row's"


def prompt_digest(text: str) -> str:
    """The sha256 of a row's `input`, as `input_sha256` carries it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def carried_digest(record: Mapping[str, Any]) -> str | None:
    """The prompt digest a record carries (`input_sha256`, else that of `input`), if any."""
    if record.get("input_sha256"):
        return record["input_sha256"]
    text = record.get("input")
    return prompt_digest(text) if isinstance(text, str) else None


def prompt_forms(text: str, answer_prefix: str) -> dict[str, str]:
    """Digest -> name of each form a row's prompt is legitimately carried in: its `input`, or
    `input + answer_prefix` (RULER's base prompt), line ends as they are or as CRLF."""
    forms: dict[str, str] = {}
    for name, form in (("input", text), ("input + answer_prefix", text + answer_prefix)):
        forms.setdefault(prompt_digest(form), name)
        forms.setdefault(prompt_digest(form.replace("\n", "\r\n")), f"{name}, CRLF line ends")
    return forms


def describe_prompt(record: Mapping[str, Any], text: str, answer_prefix: str) -> str:
    """How the prompt a record carries differs from every accepted form of the row's (`text`:
    its input): where a carried `input` first departs from the nearest form, or that a carried
    `input_sha256` is the digest of none."""
    carried = record.get("input")
    if not isinstance(carried, str) or record.get("input_sha256"):
        return (f"input_sha256 {str(record.get('input_sha256'))[:12]} is the sha256 of neither "
                f"the row's input ({prompt_digest(text)[:12]}) nor input + answer_prefix, with "
                f"LF or CRLF line ends")
    carried = carried.replace("\r\n", "\n")
    form, name = min(((text, "input"), (text + answer_prefix, "input + answer_prefix")),
                     key=lambda f: abs(len(f[0]) - len(carried)))
    at = len(commonprefix([carried, form]))  # where they first differ
    if at == len(form):
        return f"input goes on for {len(carried) - at:,} character(s) after the row's {name}"
    if at == len(carried):
        return f"input stops at character {at:,} of the row's {name} ({len(form):,})"
    return (f"input departs from the row's {name} at character {at:,}: "
            f"{carried[max(0, at - 15):at + 15]!r} where the row has "
            f"{form[max(0, at - 15):at + 15]!r}")


def tie(record: Mapping[str, Any], content_sha256: str, row: Mapping[str, Any],
        row_forms: Mapping[str, str] | None) -> tuple[str | None, str | None]:
    """(how the record is tied to `row`: a TIE_KINDS name, LENGTH_ONLY when only an equal
    length is carried, else None; what differs from that row, or None).

    `row_forms`: the digests of the row's prompt forms (`prompt_forms`), when the record
    carries a prompt to compare with."""
    kinds, wrong = [], []
    sha = record.get("data_sha256")
    if sha:
        if sha == content_sha256:
            kinds.append("data_sha256")
        else:
            wrong.append(f"data_sha256 {sha[:12]}, the data has {content_sha256[:12]}")
    digest = carried_digest(record)
    if digest is not None:
        if row_forms is not None and digest in row_forms:
            kinds.append("prompt")
        else:
            wrong.append(PROMPT_DIFFERS)
    length = record.get("length")
    if length is not None:
        if length == row.get("length"):
            kinds.append(LENGTH_ONLY)
        else:
            wrong.append(f"length {length}, the row's is {row.get('length')}")
    return (kinds[0] if kinds else None), ("; ".join(wrong) or None)
