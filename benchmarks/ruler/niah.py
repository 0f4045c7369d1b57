"""Needle in a haystack: niah_single_1..3, niah_multikey_1..3, niah_multivalue, niah_multiquery.

Haystacks: `essay` (words of the essay corpus, needles inserted between punkt sentences at
depths drawn from a 40-point grid), `noise` (copies of the noise block) and `needle`
(distractor needles), both with needles inserted as lines at random positions. In a
depth-swept build the queried needles go in the sample's depth bin instead
(catalog.placement); the other needles are placed as upstream places them.
"""

from __future__ import annotations

import itertools
import random
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ruler.benchmarks.ruler.noise import NOISE_SENTENCE
from ruler.benchmarks.ruler.tasks import NIAH
from ruler.catalog.base import Draft, TaskGenerator, joined, tail_pieces, template_ends
from ruler.catalog.depths import DEPTHS, DepthBin
from ruler.catalog.essays import EssayCorpus, shared_corpus
from ruler.catalog.family import DepthItem, TaskFamily, first_gold_item
from ruler.catalog.placement import essay_gold_cuts, line_gold_slots, token_weights
from ruler.catalog.sampling import permutation_prefix
from ruler.catalog.tally import Gather, Tally
from ruler.catalog.tasks import TaskSpec
from ruler.catalog.words import AdjectiveNounKeys
from ruler.kernel.rng import below

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
_NEEDLE_RE = re.compile(r"One of the special magic (\w+) for (.+?) is: (.+?)\.(?=\n| |$)")


_NEEDLE_HEAD_WORDS = NEEDLE.split(" ").index("{key}")  # "One of the special magic X for"


_ADJECTIVE_NOUN = re.compile(r"( [A-Za-z]+)(-[A-Za-z][A-Za-z-]*)")  # never a UUID (it has digits)
_NUMBER = re.compile(r"( [0-9]{3})([0-9]+\.?\n?)")
_UUID = re.compile(r" [0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\.?\n?")
# A run of letters, or of up to three digits (digits group by three from the left of a run)
_HEX_RUN = re.compile(r"-?(?:[0-9]{1,3}|[a-f]+)\.?\n?")


# The common line of niah_multikey_2 (word key, number value) cut by one match, as below.
_WORD_KEY_NUMBER_LINE = re.compile(
    r"(One of the special magic \w+ for)( [A-Za-z]+)(-[A-Za-z][A-Za-z-]*)( is:)"
    r"( [0-9]{3})([0-9]+\.?\n?)")


# and the common line of niah_multikey_3 (UUID key and value)
_UUID_KEY_UUID_LINE = re.compile(
    r"(One of the special magic \w+ for)( [0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})( is:)"
    r"( [0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\.?\n?)")


def _split_needle(line: str) -> tuple[str, ...]:
    """A needle line cut before its key, "is:" and value, and inside them where no token of
    a registry tokenizer spans the cut (tests/builder/test_counting.py scans the vocabularies): an
    adjective-noun key at its hyphen, a number after its first three digits (" 123" |
    "4567.\n"), a UUID between its runs of letters and of digits, and after every third
    digit of a run, each hyphen kept with the run after it (" 3" | "f" | "2" | "a" ... |
    "-bd" | "4" ...). The fixed words and these parts recur, so a new line is counted from
    cached parts. Cut only at single spaces between words."""
    common = _WORD_KEY_NUMBER_LINE.fullmatch(line)
    if common:
        return common.groups()
    uuids = _UUID_KEY_UUID_LINE.fullmatch(line)
    if uuids:  # niah_multikey_3's line: its key's and value's runs, as word by word
        head, key, is_, value = uuids.groups()
        key_runs, value_runs = _HEX_RUN.findall(key, 1), _HEX_RUN.findall(value, 1)
        return (head, " " + key_runs[0], *key_runs[1:], is_, " " + value_runs[0],
                *value_runs[1:])
    return _split_needle_by_words(line)


def _split_needle_by_words(line: str) -> tuple[str, ...]:
    words = line.split(" ")
    if "" in words:
        return (line,)
    pieces = [" ".join(words[:_NEEDLE_HEAD_WORDS])]
    for w in words[_NEEDLE_HEAD_WORDS:]:
        w = " " + w
        cut = _ADJECTIVE_NOUN.fullmatch(w) or _NUMBER.fullmatch(w)
        if cut:
            pieces += cut.groups()
        elif _UUID.fullmatch(w):
            runs = _HEX_RUN.findall(w, 1)
            pieces += (" " + runs[0], *runs[1:])
        else:
            pieces.append(w)
    return tuple(pieces)


def singular(text: str) -> str:
    """Upstream's wording for one expected answer (applied to the task template only)."""
    return (text.replace("Some", "A").replace("are all", "is").replace("are", "is")
            .replace("answers", "answer"))


def join_query(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


class NiahGenerator(TaskGenerator):
    def __init__(self, spec, ctx, max_seq_length):
        super().__init__(spec, ctx, max_seq_length)
        p: Mapping = spec.params
        self.haystack = p["type_haystack"]
        self.type_k, self.type_v = p["type_needle_k"], p["type_needle_v"]
        self.num_v, self.num_q = p["num_needle_v"], p["num_needle_q"]
        self.num_k = max(p["num_needle_k"], p["num_needle_q"])  # as upstream
        self.num_needles = self.num_k * self.num_v
        self.keys = ctx.resource("adjective-noun-keys", AdjectiveNounKeys)
        if self.haystack == "essay":
            self.corpus: EssayCorpus = ctx.resource("essay-corpus", lambda: shared_corpus(
                ctx.source("essays"), ctx.source("punkt_tab")))
        # Upstream shuffles needles with a fresh Random(seed) each call: the permutation
        # depends only on the needle count, so it is the same for every sample.
        self.needle_order = list(range(self.num_needles))
        random.Random(ctx.seed).shuffle(self.needle_order)

    unit = "haystack units"

    @property
    def calibration_step(self) -> int:  # upstream's `incremental`
        if self.haystack == "essay":
            return 500
        return 25 if self.max_seq_length >= 4096 else 5

    @property
    def min_size(self) -> int:
        return 1 if self.haystack == "essay" else self.num_needles

    # -- random values ------------------------------------------------------------------

    def _random(self, rng: random.Random, kind: str) -> str:
        if kind == "numbers":
            return str(10**6 + below(rng, 9 * 10**6))  # rng.randint(10**6, 10**7 - 1)
        if kind == "uuids":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if kind == "words":
            return self.keys.draw(rng)
        raise ValueError(f"unknown needle type {kind!r}")

    def _unique_key(self, rng: random.Random, taken: set[str]) -> str:
        while True:  # a duplicate key would make the question ambiguous (upstream bug)
            key = self._random(rng, self.type_k)
            if key not in taken:
                taken.add(key)
                return key

    def _line_drawer(self) -> Callable[[random.Random, set[str]], tuple[str, str]]:
        """`(key, line)` of a distractor line, as `_unique_key` and `_random` draw them (the
        same draws, the same strings; tests/builder/tasks/test_niah.py checks), inlined: a
        128K haystack draws thousands of lines per sample."""
        head = NEEDLE.split("{key}")[0].format(type_needle_v=self.type_v)
        key_of, value_of = _drawer(self.type_k, self.keys), _drawer(self.type_v, self.keys)

        def draw(rng: random.Random, taken: set[str]) -> tuple[str, str]:
            key = key_of(rng)
            while key in taken:
                key = key_of(rng)
            taken.add(key)
            return key, head + key + " is: " + value_of(rng) + "."

        return draw

    # -- the sample -----------------------------------------------------------------------

    def _needles(self, rng: random.Random):
        """The sample's keys, values, queried keys, and its needles (in upstream's shuffled
        order) with each one's key and whether it is asked for; `taken`: the keys used."""
        taken: set[str] = set()
        keys = [self._unique_key(rng, taken) for _ in range(self.num_k)]
        values = [[self._random(rng, self.type_v) for _ in range(self.num_v)] for _ in keys]
        queried = rng.sample(range(self.num_k), self.num_q)
        needles = [NEEDLE.format(type_needle_v=self.type_v, key=k, value=v)
                   for k, vs in zip(keys, values) for v in vs]
        owners = [i for i, vs in enumerate(values) for _ in vs]
        order = self.needle_order
        needles, owners = [needles[i] for i in order], [owners[i] for i in order]
        gold_needles = [j for j, owner in enumerate(owners) if owner in queried]
        return taken, keys, values, queried, needles, owners, gold_needles

    def _ends(self, keys: list[str], queried: list[int]) -> tuple[str, str, str, str]:
        """The template's head and tail, the answer prefix, the needle type asked for."""
        template, prefix = self.spec.family.template, self.spec.family.answer_prefix
        type_v = self.type_v
        if self.num_q * self.num_v == 1:
            template, prefix, type_v = singular(template), singular(prefix), type_v[:-1]
        query = join_query([keys[i] for i in queried])
        head, tail = template_ends(template, type_needle_v=type_v, query=query)
        return head, tail, prefix.format(type_needle_v=type_v, query=query), type_v

    def tally(self, index: int, rng: random.Random, size: int) -> Tally | None:
        """A line haystack's pieces (each line and needle with its newline): the sample's
        lines as runs of positions in its table of lines, the needles between them. Essay
        haystacks and depth-swept samples are drafted."""
        if self.haystack == "essay" or self.depth_bin(index) is not None:
            return None
        taken, keys, _, queried, needles, _, _ = self._needles(rng)
        if size + len(needles) < 3:  # the first two units and the last
            return None
        lines, table = self._lines(rng, size, taken)
        slots = sorted(rng.sample(range(size), len(needles)), reverse=True)
        runs: list = []  # the units in order: [a, b) runs of lines, or a needle's index
        prev = 0
        for j in sorted(range(len(needles)), key=lambda j: (slots[j], j)):
            if slots[j] > prev:
                runs.append([prev, slots[j]])
            runs.append(j)
            prev = slots[j]
        if size > prev:
            runs.append([prev, size])

        def take(at: int) -> str:
            """The unit at the front (0) or back (-1) of the runs, taken off them."""
            run = runs[at]
            if isinstance(run, int):
                del runs[at]
                return needles[run]
            line = lines[run[0] if at == 0 else run[1] - 1]
            run[0 if at == 0 else 1] += 1 if at == 0 else -1
            if run[0] == run[1]:
                del runs[at]
            return line

        head, tail, prefix, _ = self._ends(keys, queried)
        first, second, last = take(0), take(0), take(-1)
        return Tally(first=(head + first + "\n", second + "\n"),
                     middle=(tuple(needles[r] + "\n" for r in runs if isinstance(r, int)),
                             *(Gather(table, slice(*r)) for r in runs if not isinstance(r, int))),
                     last=tail_pieces(last, tail), answer_prefix=prefix,
                     refine=_split_needle if self.haystack == "needle" else None)

    def draft(self, index: int, rng: random.Random, size: int) -> Draft:
        taken, keys, values, queried, needles, owners, gold_needles = self._needles(rng)
        swept = self.depth_bin(index)

        opened = None
        if self.haystack == "essay":
            units, opened, starts = self._essay_units(rng, size, needles, gold_needles, swept)
            sep = " "
        else:
            units, sep, starts = self._line_units(rng, size, needles, taken, gold_needles,
                                                  swept)

        head, tail, answer_prefix, _ = self._ends(keys, queried)
        # sentences, needles and lines are non-empty and trimmed; runs of sentences may be empty
        text, pieces = joined(head, units, sep, tail, clean=True, opened=opened)
        offset = len(head)
        # in text order: line haystacks place needle 0 last (upstream's descending slots)
        gold = tuple(sorted((offset + s, offset + s + len(needles[j]))
                            for j, s in enumerate(starts) if owners[j] in queried))
        return Draft(
            input=text,
            answer_prefix=answer_prefix,
            outputs=tuple(v for i in queried for v in values[i]),
            gold_spans=gold,
            context_span=(offset, len(text) - len(tail)),
            size=size,
            pieces=pieces,
            refine=_split_needle if self.haystack == "needle" else None,
            repeated_chars=self.corpus.repeated_chars(size) if self.haystack == "essay" else 0,
        )

    def _essay_units(self, rng, size, needles, gold_needles: list[int],
                     swept: DepthBin | None) -> tuple[list[str], list[str], list[int]]:
        """Sentences with the needles between them (space-joined), " " + each unit but the
        first, and each needle's offset.

        Upstream puts needle j before sentence cut j, the j-th smallest of the cuts of
        distinct grid depths. A needle at depth 0 (or two at one cut) leaves an empty run of
        sentences, which upstream's join keeps as a doubled space; the empty unit keeps it here
        too.
        """
        sents, spaced = self.corpus.prefix_sentences_spaced(size)
        if swept is None:
            cuts = sorted(int(len(sents) * (d / 100)) for d in rng.sample(DEPTHS, len(needles)))
        else:
            cuts = self._swept_cuts(rng, sents, needles, gold_needles, swept)
        placed = sorted(range(len(needles)), key=lambda j: (cuts[j], j))
        bounds = [0, *(cuts[j] for j in placed), len(sents)]
        units: list[str] = []
        opened: list[str] = []
        starts, pos = [0] * len(needles), 0
        for i in range(1, len(bounds)):
            a, b = bounds[i - 1], bounds[i]
            units.extend(sents[a:b] if b > a else [""])
            opened.extend(spaced[a:b] if b > a else [" "])
            pos += sum(map(len, sents[a:b])) + max(b - a, 1)  # the run and the space after it
            if i - 1 < len(needles):
                j = placed[i - 1]
                units.append(needles[j])
                opened.append(" " + needles[j])
                starts[j] = pos
                pos += len(needles[j]) + 1
        return units, opened[1:], starts

    def _swept_cuts(self, rng, sents, needles, gold_needles: list[int],
                    swept: DepthBin) -> list[int]:
        """Each needle's cut in a depth-swept sample: the other needles at distinct grid
        points drawn as upstream draws them (the j-th smallest cut to the j-th of them), then
        the gold needles at grid points inside the bin."""
        others = [j for j in range(len(needles)) if j not in set(gold_needles)]
        points = rng.sample(DEPTHS, len(others))
        other_cuts = sorted(int(len(sents) * (d / 100)) for d in points)
        weigh = token_weights(self.ctx)
        gold_cuts = essay_gold_cuts(
            weigh(sents, ". "), swept, weigh([needles[j] for j in gold_needles], ". "),
            list(zip(other_cuts, weigh([needles[j] for j in others], ". "))), set(points))
        cuts = [0] * len(needles)
        for j, c in [*zip(gold_needles, gold_cuts), *zip(others, other_cuts)]:
            cuts[j] = c
        return cuts

    def _line_units(self, rng, size, needles, taken, gold_needles: list[int],
                    swept: DepthBin | None) -> tuple[list[str], str, list[int]]:
        lines = self._lines(rng, size, taken)[0][:size]
        if swept is None:  # needle j goes in before line slots[j] (slots descending)
            slots = sorted(rng.sample(range(size), len(needles)), reverse=True)
        else:  # the other needles at random lines as upstream, then the gold ones
            others = [j for j in range(len(needles)) if j not in set(gold_needles)]
            other_slots = permutation_prefix(rng, size, len(others))
            weigh = token_weights(self.ctx)
            gold_slots = line_gold_slots(
                weigh(lines, ".\n"), swept, weigh([needles[j] for j in gold_needles], ".\n"),
                list(zip(other_slots, weigh([needles[j] for j in others], ".\n"))))
            slots = [0] * len(needles)
            for j, slot in [*zip(gold_needles, gold_slots), *zip(others, other_slots)]:
                slots[j] = slot
        out: list[str] = []
        at, prev = [0] * len(needles), 0
        for j in sorted(range(len(needles)), key=lambda j: (slots[j], j)):
            out.extend(lines[prev:slots[j]])
            at[j] = len(out)
            out.append(needles[j])
            prev = slots[j]
        out.extend(lines[prev:])
        ends = list(itertools.accumulate(map(len, out)))  # each line is followed by "\n"
        starts = [ends[i - 1] + i if i else 0 for i in at]
        return out, "\n", starts

    def _lines(self, rng: random.Random, size: int,
               taken: set[str]) -> tuple[Sequence[str], Sequence[str]]:
        """The haystack's lines (at least `size`) and a table of them each with its newline
        (both the sample's, growing as larger sizes are drawn): the noise sentence, or
        distractor needles with fresh keys, never equal to a real key."""
        if self.haystack == "noise":
            table = self.__dict__.setdefault("_noise_pieces", [])
            table.extend([NOISE_SENTENCE + "\n"] * (size - len(table)))
            return [NOISE_SENTENCE] * size, table
        memo = self._distractors(rng, size, taken)
        return memo.lines, memo.pieces

    def _distractors(self, rng: random.Random, size: int, taken: set[str]) -> "_DistractorMemo":
        """The sample's distractor lines, at least `size`, drawn from `rng` (which is left
        just after the first `size` of them).

        The fitter drafts a sample at several sizes from identically seeded RNGs, and the
        lines are drawn one after another, so the lines of a smaller draft are a prefix of a
        larger one. They are kept for the last sample with RNG checkpoints every
        `_CHECKPOINT` lines: a later probe replays at most that many draws instead of all.
        """
        entry = (rng.getstate(), frozenset(taken))
        memo = self.__dict__.get("_distractor_memo")
        if memo is None or memo.entry != entry:
            memo = self.__dict__["_distractor_memo"] = _DistractorMemo(entry, entry[0],
                                                                      set(taken))
        draw = self._line_drawer()
        if size > len(memo.lines):  # draw the missing lines, checkpointing on the way
            rng.setstate(memo.end_state)
            end_taken, keys, lines, pieces = memo.end_taken, memo.keys, memo.lines, memo.pieces
            for k in range(len(memo.lines), size):
                if k % _CHECKPOINT == 0:
                    memo.checkpoints.append(rng.getstate())
                key, line = draw(rng, end_taken)
                keys.append(key)
                lines.append(line)
                pieces.append(line + "\n")
            memo.end_state = rng.getstate()
        if size == len(memo.lines):
            rng.setstate(memo.end_state)
            taken.update(memo.end_taken)
        else:  # replay from the checkpoint at or before line `size`
            c = size // _CHECKPOINT
            rng.setstate(memo.checkpoints[c])
            taken.update(memo.keys[:c * _CHECKPOINT])
            for _ in range(c * _CHECKPOINT, size):
                draw(rng, taken)
        return memo


_CHECKPOINT = 256


def _drawer(kind: str, keys: AdjectiveNounKeys) -> Callable[[random.Random], str]:
    """`NiahGenerator._random(rng, kind)` as a function of `rng` alone: the same draws and
    strings, with the kind decided once and the UUID formatted as `uuid.UUID` formats it."""
    if kind == "numbers":
        def number(rng: random.Random) -> str:  # rng.randint(10**6, 10**7 - 1), as `below`
            r = rng.getrandbits(24)
            while r >= 9_000_000:
                r = rng.getrandbits(24)
            return str(1_000_000 + r)
        return number
    if kind == "uuids":
        def uuid4(rng: random.Random) -> str:  # str(uuid.UUID(int=..., version=4))
            n = rng.getrandbits(128) & ~(0xc000 << 48) | 0x8000 << 48
            h = "%032x" % (n & ~(0xf000 << 64) | 4 << 76)
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return uuid4
    if kind == "words":
        return keys.draw
    raise ValueError(f"unknown needle type {kind!r}")


@dataclass
class _DistractorMemo:
    """One sample's distractor lines drawn so far (see NiahGenerator._distractors)."""

    entry: tuple  # (rng state, taken keys) where the sample's distractors start
    end_state: tuple  # rng state after the last line drawn
    end_taken: set[str]  # taken keys after the last line drawn
    lines: list[str] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)  # each line with its newline
    keys: list[str] = field(default_factory=list)
    checkpoints: list[tuple] = field(default_factory=list)  # state before line _CHECKPOINT * i


def _queried_keys(text: str) -> list[str] | None:
    question = text.rsplit("\n", 1)[-1]
    m = re.search(r" for (.+) mentioned in the provided text\?$", question)
    if not m:
        return None
    return re.split(r", and |, ", m.group(1)) if ", " in m.group(1) else [m.group(1)]


def gold_values_in_order(row: Mapping) -> list[str] | None:
    """The values of the queried needles in the order the needles appear in the input (the
    order of the row's gold positions), or None when they cannot be read off."""
    keys = _queried_keys(row["input"])
    if keys is None:
        return None
    wanted = set(keys)
    return [m.group(3) for m in _NEEDLE_RE.finditer(row["input"]) if m.group(2) in wanted]


def check_row(row: Mapping) -> str | None:
    """The queried keys' values, read from the needles in the input, equal `outputs`."""
    text = row["input"]
    keys = _queried_keys(text)
    if keys is None:
        return "cannot find the question line"
    found: dict[str, list[str]] = {}
    for _, key, value in _NEEDLE_RE.findall(text):
        found.setdefault(key, []).append(value)
    expected = [v for k in keys for v in found.get(k, [])]
    if sorted(expected) != sorted(row["outputs"]):
        return f"needles for {keys} hold {expected}, outputs are {list(row['outputs'])}"
    return None


def gold_spans(row: Mapping, generator=None) -> tuple[list[int], tuple[int, int]] | str:
    """Re-derived from the row alone: where the queried keys' needles start, and the
    haystack's span (between the template's first line and its question)."""
    text = row["input"]
    keys = _queried_keys(text)
    first = text.find("\n")
    if keys is None or first < 0:
        return "cannot find the question line"
    start, end = first + 1, text.rfind("\n")
    return ([n.start() for n in _NEEDLE_RE.finditer(text, start, end) if n.group(2) in keys],
            (start, end))


def depth_items(row: Mapping) -> list[DepthItem]:
    """One item per queried needle, at that needle's depth, scored on its value alone
    (upstream's string_match_all is the mean of these per-needle hits, so a multi-value or
    multi-query row counts each needle where it sits); the row as one item at its first
    needle when the values cannot be read off the input."""
    depths = list(row.get("gold_depths") or ())
    if not depths:
        return []
    values = gold_values_in_order(row) if len(depths) > 1 else list(row["outputs"])
    if values is not None and len(values) == len(depths):
        return [DepthItem(d, (v,)) for d, v in zip(sorted(depths), values)]
    return first_gold_item(row)


def depth_columns(spec: TaskSpec) -> tuple[str, ...]:
    """The input (megabytes at long lengths) only where several queried needles must be told
    apart (multivalue, multiquery)."""
    several = spec.params.get("num_needle_v", 1) > 1 or spec.params.get("num_needle_q", 1) > 1
    return ("input",) if several else ()


FAMILY = TaskFamily(
    spec=NIAH, generator=NiahGenerator, check_row=check_row, gold_spans=gold_spans,
    sweepable=True, depth_items=depth_items, depth_columns=depth_columns,
    depth_group=NIAH.name)
