"""RULERv2's needle tasks (mk_niah_basic, mv_niah_basic): distractor needles as the haystack.

Upstream (`prepare_niah.py`, `--type_haystack needle`, word keys, 10-digit values): the
needles of one key (1 or 4 values) are shuffled; the haystack is `n` lines in the needle's
format: with one value per key, each line a fresh key and value; with 4 values, `n` values
and ceil(n/4) keys, key i paired with values i, i + ceil(n/4), ..., the lines shuffled (so a
distractor key recurs up to 4 times, as the queried one does). The needles go before `n`
distinct lines drawn uniformly (never after the last line). The answer lists the key's values
in the order they were drawn. One difference: a distractor never has the queried key (upstream
may draw it again, 1 in 6.2 million per line, which would add values to the answer).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass, field
from typing import Mapping

from ruler.benchmarks.ruler.niah import _split_needle
from ruler.benchmarks.ruler2.items import aimed_step, assemble, number, split_value
from ruler.benchmarks.ruler2.prompts import NIAH_MULTIPLE, NIAH_NEEDLE, NIAH_SINGLE
from ruler.benchmarks.ruler2.tasks import RULER2_NIAH
from ruler.catalog.base import Draft, TaskGenerator, template_ends
from ruler.catalog.family import TaskFamily
from ruler.catalog.tasks import TaskSpec
from ruler.catalog.words import AdjectiveNounKeys

_LINE = re.compile(r"One of the special magic (\w+) for (.+?) is: ([0-9]+)\.$", re.M)
_QUESTION = re.compile(r"\nWhat (?:is|are all) the special magic \w+ for (.+?) mentioned in the "
                       r"provided text\? The special magic \w+ for \1 mentioned in the provided "
                       r"text (?:is|are)\Z")


def template_of(spec: TaskSpec) -> tuple[str, str]:
    """Upstream's template and the word its `{type_needle_v}` becomes: the single-answer
    wording (and "number") when one value is asked for."""
    p = spec.params
    plural = p["type_needle_v"]
    if p["num_needle_q"] * p["num_needle_v"] == 1:
        return NIAH_SINGLE, plural[:-1]
    return NIAH_MULTIPLE, plural


def split_line(piece: str) -> tuple[str, ...]:
    """A needle line cut before its key, "is:" and value (`niah._split_needle`), and its
    10-digit value after every third digit."""
    parts = _split_needle(piece)
    return (*parts[:-2], *split_value(parts[-2] + parts[-1])) if len(parts) > 2 else parts


class Ruler2NiahGenerator(TaskGenerator):
    unit = "haystack lines"

    @property
    def calibration_step(self) -> int:
        return aimed_step(self.max_seq_length, 20, 25)  # a line is about 20 tokens

    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        if (p["type_haystack"], p["type_needle_k"], p["type_needle_v"]) != \
                ("needle", "words", "numbers") or p["num_needle_k"] != 1 or \
                p["num_needle_q"] != 1:
            raise ValueError(f"task {spec.name}: RULERv2's needle tasks have one word key "
                             f"with number values in a needle haystack")
        self.values_per_key, self.digits = p["num_needle_v"], p["num_digits_v"]
        self.type_v = p["type_needle_v"]
        self.template, self.type_asked = template_of(spec)
        self.keys = ctx.resource("adjective-noun-keys", AdjectiveNounKeys)

    @property
    def min_size(self) -> int:
        return self.values_per_key  # upstream samples a distinct line per needle

    def _line(self, key: str, value: str) -> str:
        return NIAH_NEEDLE.format(type_needle_v=self.type_v, key=key, value=value)

    def _other_key(self, rng: random.Random, key: str) -> str:
        while True:
            other = self.keys.draw(rng)
            if other != key:
                return other

    def _haystack(self, stream: int, size: int, key: str,
                  order: random.Random) -> list[str]:
        """`size` distractor lines from the sample's line stream (`stream` seeds it). With v
        values per key: ceil(size / v) keys, the last v * keys - size of them with v - 1
        values (upstream's cut of its key list repeated v times), shuffled by `order`. Keys
        and their values are drawn key after key, so a larger draft holds a smaller one's
        lines; the stream is kept for the sample's next draft (`_Lines`), which only draws
        what it lacks."""
        lines = self.__dict__.get("_lines")
        if lines is None or (lines.stream, lines.key) != (stream, key):
            lines = self.__dict__["_lines"] = _Lines(stream, key, random.Random(stream))
        v = self.values_per_key
        groups = math.ceil(size / v)
        while len(lines.groups) < groups:  # one key and its v values each
            other = self._other_key(lines.rng, key)
            lines.groups.append(tuple(self._line(other, number(lines.rng, self.digits))
                                      for _ in range(v)))
        if v == 1:
            return [group[0] for group in lines.groups[:size]]
        short = groups * v - size  # keys with one value fewer: the last ones
        out = [line for k, group in enumerate(lines.groups[:groups])
               for line in group[:v - (k >= groups - short)]]
        order.shuffle(out)
        return out

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        key = self.keys.draw(rng)
        values = [number(rng, self.digits) for _ in range(self.values_per_key)]
        needles = [self._line(key, v) for v in values]
        rng.shuffle(needles)
        stream, order = rng.getrandbits(64), random.Random(rng.getrandbits(64))
        units = self._haystack(stream, size, key, order)  # a list of the draft's own
        slots = sorted(rng.sample(range(size), len(needles)))
        at = [slot + j for j, slot in enumerate(slots)]  # needle j before line slots[j]
        for i, needle in zip(at, needles):
            units.insert(i, needle)
        head, tail = template_ends(self.template, type_needle_v=self.type_asked, query=key)
        text, pieces = assemble(head, units, [tail[1:]], sep="\n")  # tail: "\nWhat ..."
        starts = list(itertools.accumulate((len(unit) + 1 for unit in units[:-1]),
                                           initial=len(head)))
        gold = tuple((starts[i], starts[i] + len(units[i])) for i in at)
        return Draft(input=text, answer_prefix="", outputs=tuple(values), gold_spans=gold,
                     context_span=(len(head), len(text) - len(tail)), size=size,
                     pieces=pieces, refine=split_line)


@dataclass
class _Lines:
    """One sample's distractor lines drawn so far: the fitter drafts a sample at several
    sizes, and each draft takes the first lines of one stream."""

    stream: int
    key: str
    rng: random.Random
    groups: list[tuple[str, ...]] = field(default_factory=list)


# --- checks ----------------------------------------------------------------------------------

def check_row(row: Mapping) -> str | None:
    """The asked key's needles in the input hold exactly `outputs`."""
    m = _QUESTION.search(row["input"])
    if m is None:
        return "cannot find the question"
    key = m.group(1)
    found = [value for _, k, value in _LINE.findall(row["input"]) if k == key]
    if sorted(found) != sorted(row["outputs"]):
        return f"needles for {key} hold {found}, outputs are {list(row['outputs'])}"
    return None


def gold_spans(row: Mapping, generator=None):
    """The asked key's needle lines, and the haystack between the instruction's line and the
    question."""
    text = row["input"]
    m = _QUESTION.search(text)
    first = text.find("\n")
    if m is None or first < 0:
        return "cannot find the question"
    start, end = first + 1, m.start()
    return ([n.start() for n in _LINE.finditer(text, start, end) if n.group(2) == m.group(1)],
            (start, end))


FAMILY = TaskFamily(spec=RULER2_NIAH, generator=Ruler2NiahGenerator,
                    check_row=check_row, gold_spans=gold_spans)
