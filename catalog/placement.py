"""Where a depth-swept sample's gold items go (`ruler build --depths N`): pure functions.

Each function picks positions for the gold items so that their depth lies inside the sample's
bin, as close to the bin's centre as the haystack's own grid allows; everything else (other
needles, distractors, document choice) stays as upstream places it. Depth here is measured by
the units' token counts (`TokenWeights`), a close proxy for the in-context token depth the row
records; characters are not (a QA document of digits or non-Latin text has several times the
tokens per character of prose). The worker checks every row's recorded depth, so a miss is an
error, never a wrong row.

- essay haystacks: the points of upstream's 40-point depth grid (not taken by the other
  needles) whose sentence cut falls inside the bin, nearest the centre first (several gold
  needles take several points, and share the best ones when the bin has too few);
- line haystacks (noise, distractor needles): the line nearest the bin's centre;
- documents (qa): the gold documents as one block at the slot whose depth (the mean of the
  gold documents' starts) lies in the bin nearest its centre (a distractor document spanning
  the whole bin moves to the far end of the context first). The mean, not every start, is
  placed: HotpotQA's two supporting documents together can be longer than a bin.
"""

from __future__ import annotations

import itertools
from typing import Sequence

from ruler.catalog.depths import DEPTHS, DepthBin
from ruler.catalog.tokenizer import Tokenizer

#: Positions within this fraction of a bin's width of its inner edges are used only when no
#: other is inside: the in-context token depth may differ slightly from the units' own counts.
EDGE_MARGIN = 0.05


class TokenWeights:
    """Token counts of units as they count in context, each counted once per process.

    A unit is counted after the text that ends the unit before it (`after`: ". " before an
    essay sentence, ".\n" before a line, ":\n" before a document), minus that text's own
    count: taken alone, a unit can count differently (SentencePiece adds a "▁" to a
    leading space, BPE merges differ at a text's start), and over thousands of units a
    one-token difference each would shift depths by percent.
    """

    MAX_CACHED = 500_000

    def __init__(self, tokenizer: Tokenizer):
        self._tok = tokenizer
        self._counts: dict[tuple[str, str], int] = {}
        self._after: dict[str, int] = {}

    def __call__(self, texts: Sequence[str], after: str) -> list[int]:
        missing = [t for t in dict.fromkeys(texts) if (after, t) not in self._counts]
        if missing:
            if len(self._counts) + len(missing) > self.MAX_CACHED:
                self._counts.clear()
            if after not in self._after:
                self._after[after] = self._tok.count(after)
            counts = self._tok.count_batch([after + t for t in missing])
            base = self._after[after]
            self._counts.update(((after, t), max(0, c - base)) for t, c in zip(missing, counts))
        return [self._counts[(after, t)] for t in texts]


def token_weights(ctx) -> TokenWeights:
    """The build context's TokenWeights (one per process, shared by the generators)."""
    return ctx.resource("placement-token-weights", lambda: TokenWeights(ctx.tokenizer))


def _bounds(bin: DepthBin, margin: float) -> tuple[float, float]:
    """The bin's interval shrunk by `margin` at its inner edges (nothing lies below depth 0 or
    above 1, so the outer edges need none)."""
    lo = bin.lo + margin if bin.index > 0 else float("-inf")
    hi = bin.hi - margin if bin.index < bin.bins - 1 else float("inf")
    return lo, hi


def _ranked(spans: dict, bin: DepthBin) -> list:
    """Keys of `spans` ((first, last) depth a key's gold items may take) inside the bin,
    nearest the centre first: those away from its edges if any are (too few of them are
    shared by several gold needles), else those merely inside it."""
    levels = []
    for m in (EDGE_MARGIN * bin.width, 0.0):
        lo, hi = _bounds(bin, m)
        inside = [k for k, (a, b) in spans.items() if lo <= a and b < hi]
        levels.append(sorted(inside, key=lambda k: (abs(sum(spans[k]) / 2 - bin.centre), k)))
    return next((keys for keys in levels if keys), [])


class _Haystack:
    """Depths in a haystack of weighted units with needles inserted at cuts (a needle at
    cut c goes in before unit c): the weight before each cut, over the whole context's."""

    def __init__(self, weights: Sequence[int], gold: Sequence[int],
                 others: Sequence[tuple[int, int]]):
        self.n = len(weights)
        self.before = [0, *itertools.accumulate(weights)]
        self.others = sorted(others)
        self.total = max(1, self.before[-1] + sum(gold) + sum(w for _, w in others))
        self.cluster = sum(gold) - min(gold, default=0)  # gold needles that may come first

    def span(self, c: int) -> tuple[float, float]:
        """The depths a gold needle at cut c may take: with none or all of the other gold
        needles before it."""
        at = self.before[c] + sum(w for oc, w in self.others if oc < c)
        return at / self.total, (at + self.cluster) / self.total

    def nearest(self, bin: DepthBin) -> int:
        return min(range(self.n + 1), key=lambda c: (abs(sum(self.span(c)) / 2 - bin.centre), c))


def essay_gold_cuts(weights: Sequence[int], bin: DepthBin, gold: Sequence[int],
                    others: Sequence[tuple[int, int]], taken: set[int]) -> list[int]:
    """Sentence cuts (needle before sentence c) for the gold needles, ascending.

    Args:
        weights: per sentence, its weight.
        bin: the bin the gold needles go in.
        gold: the gold needles' weights.
        others: (cut, weight) of the other needles, already placed.
        taken: the grid points the other needles use (upstream never puts two needles at
            one grid point; gold needles share a point only when the bin has too few).

    A grid point d cuts at sentence int(S * d / 100), as upstream; a needle's depth is the
    share of the context's weight (sentences and needles) before it. A point qualifies when
    a gold needle there stays in the bin even with the other gold needles before it. With no
    grid point inside the bin (a haystack of a few sentences), the sentence boundary nearest
    the centre is used, off the grid.
    """
    hay = _Haystack(weights, gold, others)
    cut_of = {d: int(hay.n * d / 100) for d in DEPTHS if d not in taken}
    ranked = _ranked({d: hay.span(c) for d, c in cut_of.items()}, bin)
    if ranked:
        return sorted(cut_of[ranked[i % len(ranked)]] for i in range(len(gold)))
    return [hay.nearest(bin)] * len(gold)


def line_gold_slots(weights: Sequence[int], bin: DepthBin, gold: Sequence[int],
                    others: Sequence[tuple[int, int]]) -> list[int]:
    """Slots (a needle goes in before haystack line s) for the gold needles: the line whose
    depth is nearest the bin's centre, all of them there (consecutive lines).

    Args as `essay_gold_cuts`, with lines for sentences and any line for a grid point.
    """
    hay = _Haystack(weights, gold, others)
    taken = {c for c, _ in others}
    free = [c for c in range(hay.n) if c not in taken]  # as upstream: before one of the lines
    slot = min(free, key=lambda c: (abs(sum(hay.span(c)) / 2 - bin.centre), c))
    return [slot] * len(gold)


def document_order(rest: Sequence[int], block: Sequence[int], fixed: Sequence[int],
                   bin: DepthBin) -> tuple[list[int], list[int], int]:
    """Where a block of gold documents goes among the others: the others' order (indices
    into `rest`: upstream's order unless a document had to move), the block's order (indices
    into `block`) and the block's slot j among the others.

    Args:
        rest: weights (token counts) of the other documents, in upstream's order.
        block: weights of the gold documents.
        fixed: per position k of the final list (len(rest) + len(block) of them), the
            weight it adds whatever document it holds (its "Document k:" header and the
            separator after it, if any).
        bin: the bin the block's depth must lie in.

    A document starts where its header starts; the block's depth is the mean of its
    documents' starts (`qa.gold_block_depth`). The block goes shortest document first or
    longest first, whichever puts its depth in the bin, away from its edges, nearest the
    centre (longest first reaches deeper: HotpotQA's two documents can outweigh the last
    bin). When no slot can because one other document straddles the bin (the block before
    it lies too early, after it too late), that document moves to the far end of the
    context (the end for a bin in the first half, else the start) and the slot is sought
    again. Only then are the bin's edges allowed; when no slot is in the bin at all, the
    nearest one is taken (the worker then reports the miss).
    """
    shortest = sorted(range(len(block)), key=lambda t: (block[t], t))
    block_orders = [shortest] + ([shortest[::-1]] if len(block) > 1 else [])
    upstream = list(range(len(rest)))
    for margin in (EDGE_MARGIN * bin.width, 0.0):
        order = list(upstream)
        for _ in range(len(rest) + 1):
            found, straddling = [], None
            for bo in block_orders:
                depths = _block_depths([rest[i] for i in order], [block[t] for t in bo], fixed)
                j, s = _slot_in(depths, bin, margin)
                if j is not None:
                    found.append((abs(depths[j] - bin.centre), j, bo))
                elif straddling is None:
                    straddling = s
            if found:
                _, j, bo = min(found)
                return order, bo, j
            if straddling is None:
                break
            moved = order.pop(straddling)
            if bin.centre < 0.5:
                order.append(moved)
            else:
                order.insert(0, moved)
    depths = _block_depths(rest, [block[t] for t in shortest], fixed)
    return upstream, shortest, min(range(len(depths)),
                                   key=lambda j: (abs(depths[j] - bin.centre), j))


def _block_depths(rest: Sequence[int], block: Sequence[int],
                  fixed: Sequence[int]) -> list[float]:
    """Per slot j among `rest`, the block's depth: the mean of its documents' starts."""
    g, n = len(block), len(rest) + len(block)
    fixed_before = [0, *itertools.accumulate(fixed[:n])]
    rest_before = [0, *itertools.accumulate(rest)]
    block_before = [0, *itertools.accumulate(block)]
    total = max(1, fixed_before[n] + rest_before[-1] + block_before[-1])
    return [sum(fixed_before[j + t] + rest_before[j] + block_before[t] for t in range(g))
            / (g * total) for j in range(len(rest) + 1)]


def _slot_in(depths: Sequence[float], bin: DepthBin,
             margin: float) -> tuple[int | None, int | None]:
    """(the slot nearest the centre whose depth lies in the bin shrunk by `margin`, None) or,
    when there is none, (None, the position of the other document that straddles the bin,
    or None when none does)."""
    lo, hi = _bounds(bin, margin)
    fits = [j for j, x in enumerate(depths) if lo <= x < hi]
    if fits:
        return min(fits, key=lambda j: (abs(depths[j] - bin.centre), j)), None
    for j in range(len(depths) - 1):
        if depths[j] < lo and depths[j + 1] >= hi:
            return None, j
    return None, None
