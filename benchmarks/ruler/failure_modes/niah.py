"""Needle-in-a-haystack rows (`paper-analysis.md` §4.3 niah, §4.4 NIAH modes).

Every needle of the input is read from upstream's needle sentence ("One of the special magic
{numbers|words|uuids} for {key} is: {value}."), in order: the row's keys, values and their
types, the needle haystack's distractor lines included. The targets are the needles whose
value is a reference; the distractors, the needles whose key was not asked for. So the number
of keys, values and queries and the needle types are those of the row, whatever the task's
configuration."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from ruler.benchmarks.ruler.failure_modes.base import Answer, Found, LabelRow
from ruler.benchmarks.ruler.failure_modes.labels import THRESHOLDS
from ruler.benchmarks.ruler.failure_modes.text import common_hex_run, common_prefix, contains

NEEDLE = re.compile(r"One of the special magic (numbers|words|uuids) for (.+?) is: (.+?)\.(?=\s|$)")

_UUID_RUN = re.compile(r"(?<![0-9a-f-])[0-9a-f-]+(?![0-9a-f-])")
_WORD = re.compile(r"(?<![a-z0-9-])[a-z]+(?:-[a-z]+)+(?![a-z0-9-])")
_NUMBER = re.compile(r"(?<!\d)\d{4,}(?!\d)")
_GROUPED = re.compile(r"(?<!\d)\d{1,3}(?:[,.' _]\d{3})+(?!\d)")
_SEPARATED = re.compile(r"[\s_-]")


@dataclass(frozen=True)
class Needle:
    ord: int  # its place among the row's needles, in input order
    key: str
    value: str
    kind: str  # of the value: numbers, words or uuids
    at: int  # character offset of the sentence in the input
    key_low: str  # key and value in lower case (matching is case-insensitive)
    value_low: str


def needles(text: str) -> list[Needle]:
    return [Needle(n, m.group(2), m.group(3), m.group(1), m.start(), m.group(2).lower(),
                   m.group(3).lower()) for n, m in enumerate(NEEDLE.finditer(text))]


def value_spans(pred_lower: str) -> list[tuple[str, str]]:
    """The value-shaped spans of a lower-cased answer as (kind, span), §4.3: runs of hex
    digits and dashes holding 8+ hex digits (uuids; an all-digit run is a number [ours]),
    adjective-noun words, digit runs of 4+; UUID runs first, so their parts are not read
    again as numbers or words."""
    spans: list[tuple[str, str]] = []
    rest = pred_lower
    for m in _UUID_RUN.finditer(pred_lower):
        run = m.group().strip("-")
        if sum(c != "-" for c in run) >= THRESHOLDS.uuid_prefix and not run.isdigit():
            spans.append(("uuids", run))
            rest = rest[:m.start()] + " " * len(m.group()) + rest[m.end():]
    spans += [("words", m.group()) for m in _WORD.finditer(rest)]
    spans += [("numbers", m.group()) for m in _NUMBER.finditer(rest)]
    return spans


def _kind_of(text: str) -> str:
    low = text.lower()
    if low.isdigit():
        return "numbers"
    if re.fullmatch(r"[0-9a-f-]+", low) and sum(c != "-" for c in low) >= 8:
        return "uuids"
    return "words"


def formatted(gold: str, kind: str, pred_lower: str) -> bool:
    """Whether a gold value not found as the metric's substring is there in another format
    ([ours]): a number written in groups ("1,234,567", "1 234 567"), a UUID without or with
    other separators, adjective and noun without their hyphen. Only within one value: the
    digits of two answers side by side are no number."""
    g = gold.lower()
    if kind == "numbers":
        return any(re.sub(r"\D", "", m.group()) == g for m in _GROUPED.finditer(pred_lower))
    if kind == "uuids":
        bare = _SEPARATED.sub("", g)
        return len(bare) >= 8 and bare in _SEPARATED.sub("", pred_lower)
    parts = [re.escape(p) for p in g.split("-")]
    return re.search(r"(?<![a-z0-9-])" + r"[\s_]*".join(parts) + r"(?![a-z0-9-])",
                     pred_lower) is not None


def label(row: LabelRow, ans: Answer, found: Found) -> None:
    ns = needles(row.input)
    refs = {r.lower() for r in row.outputs}
    pred = ans.lower
    # Targets: needles whose value is a reference, and every needle of an asked key (a
    # distractor drawn with the asked key counts as a target, §4.6 collisions).
    asked = {n.key_low for n in ns if n.value_low in refs}
    targets = [n for n in ns if n.key_low in asked]
    distractors = [n for n in ns if n.key_low not in asked]
    values = {n.value_low for n in ns}
    keys = {n.key_low for n in ns}
    spans = value_spans(pred)
    missing = [g for g in row.outputs if g.lower() not in pred]
    value_kind = {n.value_low: n.kind for n in ns}

    found.add("format", any(formatted(g, value_kind.get(g.lower(), _kind_of(g)), pred)
                            for g in missing))
    found.add("empty", not spans and "format" not in found.flags)

    # distractor values: whole, or a span that is a distractor's value cut short (and not
    # the gold's: a truncated span matching a distractor's prefix is that distractor, §4.5)
    unknown = [(k, s) for k, s in spans if s not in values and s not in keys]
    hit = [d for d in distractors if d.value_low in pred and contains(pred, d.value, d.kind)]
    for kind, s in unknown:
        least = THRESHOLDS.uuid_prefix if kind == "uuids" else THRESHOLDS.distractor_digits
        if len(s) < least or any(g.lower().startswith(s) for g in row.outputs):
            continue
        hit += [d for d in distractors if d.value_low.startswith(s) and d not in hit]
    if hit:
        found.add("distractor_value")
        _vicinity(row, ns, targets, hit, found)

    # a gold value cut short: a UUID (the paper's) or a 7-digit number (ours)
    for g in missing:
        kind = value_kind.get(g.lower(), _kind_of(g))
        for _, s in unknown:
            if kind == "uuids" and (common_prefix(s, g) >= THRESHOLDS.uuid_prefix
                                    or common_hex_run(s, g) >= THRESHOLDS.uuid_prefix):
                found.add("incomplete_value")
            elif kind == "numbers" and s.isdigit() and \
                    common_prefix(s, g) >= THRESHOLDS.number_prefix:
                found.add("partial_number")

    found.add("incomplete_set", len(row.outputs) > 1 and 0 < ans.score < 1)
    counted = Counter(s for _, s in spans if s not in keys)
    found.add("duplicated", any(n > 1 for n in counted.values()))
    found.add("hallucinated_value", bool(spans) and not any(
        s in values or s in keys for _, s in spans)
        and not found.flags & {"incomplete_value", "partial_number"})
    any_value = any(n.value_low in pred and contains(pred, n.value, n.kind) for n in ns)
    found.add("key_echo", not any_value and any(
        k in pred and contains(pred, k, _kind_of(k)) for k in keys))


def _vicinity(row: LabelRow, ns: Sequence[Needle], targets: Sequence[Needle],
              hit: Sequence[Needle], found: Found) -> None:
    """`vicinity` (§4.4): the nearest distractor found, in needles and in characters, and the
    chance a uniformly picked distractor would be that near."""
    if not targets:
        return
    d, t, h = min(((abs(h.ord - t.ord), t, h) for t in targets for h in hit),
                  key=lambda x: (x[0], x[1].ord, x[2].ord))
    w, m = THRESHOLDS.vicinity_needles, len(ns)
    found.distance = d
    found.char_distance = round(abs(h.at - t.at) / max(1, len(row.input)), 6)
    found.chance = round((min(w, t.ord) + min(w, m - 1 - t.ord)) / (m - 1), 6) if m > 1 else None
    found.add("vicinity", d <= w)
