"""What RULERv2's prompts share: random numbers, items (MMLU questions, HotpotQA documents)
under 7-digit ids joined by blank lines, and the cuts that let the counter reuse counts.

Upstream draws every id with `random.randint(10**6, 10**7 - 1)` independently, so two items
of one prompt may share an id by chance, and a question then asks for an id that names two
items. Here the ids of a prompt are distinct (`draw_ids`); where upstream repeats an id on
purpose (the mv tasks' `num_order`), the repetition is upstream's.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import AbstractSet, Callable, Iterator, Sequence

from ruler.benchmarks.ruler2.prompts import ITEM_SEPARATOR
from ruler.catalog.sampling import draw_unique
from ruler.kernel.rng import below


def number(rng: random.Random, digits: int) -> str:
    """A random `digits`-digit number, as upstream's `randint(10**(d-1), 10**d - 1)`."""
    low = 10 ** (digits - 1)
    return str(low + below(rng, 9 * low))


def aimed_step(max_seq_length: int, tokens_per_unit: int, least: int) -> int:
    """The fitter's second probe (`TaskGenerator.calibration_step`) aimed near the final size
    from a rough, fixed tokens-per-unit figure: the secant through it then lands within a few
    units, and a sample takes about 4 probes instead of 6. Fixed, so a sample's probes, and its
    row, depend on nothing but the sample."""
    return max(least, round(0.9 * max_seq_length / tokens_per_unit))


def draw_ids(rng: random.Random, count: int) -> list[str]:
    """`count` distinct 7-digit ids; the first k of a larger draw are those of a smaller one."""
    return draw_unique(rng, count, lambda r: number(r, 7))


def id_stream(rng: random.Random) -> Iterator[str]:
    """`draw_ids`'s ids one at a time (the same ids, in the same order)."""
    seen: set[str] = set()
    while True:
        drawn = number(rng, 7)
        if drawn not in seen:
            seen.add(drawn)
            yield drawn


def permutation_stream(rng: random.Random, n: int,
                       exclude: AbstractSet[int] = frozenset()) -> Iterator[int]:
    """`sampling.permutation_prefix`'s picks one at a time: its first k are the prefix of k."""
    moved: dict[int, int] = {}
    for i in range(n):
        j = i + below(rng, n - i)
        picked = moved.get(j, j)
        moved[j] = moved.get(i, i)
        if picked not in exclude:
            yield picked


class SampleStreams:
    """What one sample has drawn from its streams so far, kept between the fitter's drafts of
    it: a draft takes the first k draws of each stream (a larger draft extends a smaller one),
    so a second draft draws and formats only what the first did not. `key` identifies the
    sample's streams (their seeds); a new key starts afresh (one sample at a time)."""

    def __init__(self) -> None:
        self._key: object = None
        self._drawn: dict[object, tuple[Iterator, list]] = {}

    def first(self, key: object, name: object, count: int,
              start: Callable[[], Iterator]) -> list:
        """The first `count` items of stream `name` (made by `start()` the first time)."""
        if key != self._key:
            self._key, self._drawn = key, {}
        if name not in self._drawn:
            self._drawn[name] = (start(), [])
        stream, drawn = self._drawn[name]
        if count > len(drawn):
            drawn.extend(itertools.islice(stream, count - len(drawn)))
            if count > len(drawn):
                raise ValueError(f"stream {name!r} ends after {len(drawn)} items")
        return drawn[:count]


def assemble(head: str, items: Sequence[str], tail: Sequence[str],
             sep: str = ITEM_SEPARATOR) -> tuple[str, tuple[str, ...]]:
    """`head + sep.join(items) + sep + "".join(tail)` and the same text in pieces for the
    counter (builder.counting): the head in two (cut at its last space before a word), then
    each item with the separator after it, then each tail part (a few-shot block's lines and
    examples, each ending in its line break, then the problem). Every piece after the head
    starts right after a line break with a non-space, a clean junction; one that does not is
    glued to the piece before it.

    So the frame the counter tokenizes whole (with the chat template) is the head and the
    last tail part, which stay the same while the fitter tries sizes of one sample, and an
    item is counted once, then recalled (`split_ids` cuts a new id off a known text)."""
    cut = max(k for k in range(1, len(head) - 1) if head[k] == " " and not head[k + 1].isspace())
    pieces = [head[:cut], head[cut:]]
    for part in [*(item + sep for item in items), *tail]:
        if not part or part[0].isspace():
            pieces[-1] += part
        else:
            pieces.append(part)
    return "".join(pieces), tuple(pieces)


# A 7-digit id: the space before it, its first three digits, the rest (with ":" or ":\n").
_ID = re.compile(r" [0-9]{7}(?![0-9])(:\n?)?")
_ITEM_HEAD = re.compile(r"(Question|Document)( [0-9]{3})([0-9]{4}:\n?)")


def split_ids(piece: str) -> tuple[str, ...]:
    """A piece cut around each 7-digit id where no token of a registry tokenizer spans the
    cut (tests/builder/test_counting.py): before its space, after its first three digits (as
    a needle value's), and after the id where the text goes on cleanly (a space then a
    non-space, or a non-space after ":\n"), so a new id costs no new tokenization:
    "Question" | " 123" | "4567:" | " text\n\n", "Document" | " 123" | "4567:\n" | "Title..",
    "Please copy the Question" | " 123" | "4567" | " from the context ...". Where the text
    does not go on cleanly (a second space, a full stop) it stays with the id's digits."""
    head = _ITEM_HEAD.match(piece)
    if head is not None and _ID.search(piece, head.end()) is None:  # an item: one id
        label, first, rest = head.groups()
        text = piece[head.end():]
        clean = text[:1] != "" and not text[0].isspace() if rest.endswith("\n") \
            else text[:1] == " " and text[1:2] != "" and not text[1].isspace()
        return (label, first, rest, text) if clean else (label, first, rest + text)
    out: list[str] = []
    pos = 0
    for m in _ID.finditer(piece):
        start, end = m.start(), m.end()
        if start > pos:
            out.append(piece[pos:start])
        out.append(piece[start:start + 4])
        rest = piece[end:end + 2]
        clean = (rest[:1] != "" and not rest[0].isspace()) if piece[end - 1:end] == "\n" \
            else (rest[:1] == " " and rest[1:2] != "" and not rest[1].isspace())
        if clean:
            out.append(piece[start + 4:end])
            pos = end
        else:
            pos = start + 4
    if pos < len(piece):
        out.append(piece[pos:])
    return tuple(out)


# A 10-digit value after " is:": " 123" | "456" | "789" | "0.\n"; digits group by three from
# the left of a run (or one by one), so each group ends a pre-token.
_VALUE = re.compile(r"( [0-9]{3})([0-9]{3})([0-9]{3})([0-9]\.\n?)")


def split_value(piece: str) -> tuple[str, ...]:
    m = _VALUE.fullmatch(piece)
    return m.groups() if m else (piece,)
