"""What RULERv2's prompts share: random numbers, items (MMLU questions, HotpotQA documents)
under 7-digit ids joined by blank lines, and the cuts that let the counter reuse counts.

Upstream draws every id with `random.randint(10**6, 10**7 - 1)` independently, so two items
of one prompt may share an id by chance, and a question then asks for an id that names two
items. Here the ids of a prompt are distinct (`draw_ids`); where upstream repeats an id on
purpose (the mv tasks' `num_order`), the repetition is upstream's.
"""

from __future__ import annotations

import random
import re
from typing import Sequence

from ruler.builder.rng import below
from ruler.builder.tasks.base import joined
from ruler.builder.tasks.ruler2_prompts import ITEM_SEPARATOR
from ruler.builder.tasks.sampling import draw_unique


def number(rng: random.Random, digits: int) -> str:
    """A random `digits`-digit number, as upstream's `randint(10**(d-1), 10**d - 1)`."""
    low = 10 ** (digits - 1)
    return str(low + below(rng, 9 * low))


def draw_ids(rng: random.Random, count: int) -> list[str]:
    """`count` distinct 7-digit ids; the first k of a larger draw are those of a smaller one."""
    return draw_unique(rng, count, lambda r: number(r, 7))


def join_items(head: str, items: Sequence[str], tail: str) -> tuple[str, tuple[str, ...]]:
    """`head + "\\n\\n".join(items) + tail`, cut into pieces after each blank line (where the
    next item starts with a non-space), and the tail's text after its leading newlines."""
    return joined(head, items, ITEM_SEPARATOR, tail)


# "Question 1234567: text" / "Document 1234567:\ntext": the label, the id's first three digits
# with the space before them, the rest of the id with the colon (and newline), and the text.
_ITEM = re.compile(r"(Question|Document)( [0-9]{3})([0-9]{4}:\n?)(.*)", re.S)


def split_item(piece: str) -> tuple[str, ...]:
    """An item piece cut where no token of a registry tokenizer spans the cut (the id's
    digits as a needle value's: tests/builder/test_counting.py), so a new id costs no new
    tokenization: "Question" | " 123" | "4567:" | " text...\\n\\n". The text is cut off only
    where it starts cleanly (a space then a non-space after "Question N:", a non-space after
    "Document N:\\n"); otherwise it stays with the id."""
    m = _ITEM.fullmatch(piece)
    if m is None:
        return (piece,)
    label, first, rest, text = m.groups()
    clean = (text[:1] == " " and text[1:2] not in ("", " ", "\n", "\t")) if label == "Question" \
        else (text[:1] != "" and not text[0].isspace())
    return (label, first, rest, text) if clean else (label, first, rest + text)


# A 10-digit value after " is:": " 123" | "456" | "789" | "0.\n"; digits group by three from
# the left of a run (or one by one), so each group ends a pre-token.
_VALUE = re.compile(r"( [0-9]{3})([0-9]{3})([0-9]{3})([0-9]\.\n?)")


def split_value(piece: str) -> tuple[str, ...]:
    m = _VALUE.fullmatch(piece)
    return m.groups() if m else (piece,)
