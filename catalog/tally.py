"""A draft's pieces as a counter needs them, without the draft's text (builder.counting).

The fitter measures a sample at several sizes, and only the size it keeps becomes a row. A
generator whose draft is mostly a long run of recurring pieces (a word list drawn from a pool,
a sample's distractor lines) can say what a draft of a size holds without writing it: its first
two pieces, its last few, and the pieces between as runs — literal pieces, or positions in a
long-lived table of pieces (`Gather`), whose counts the counter keeps as an array. The counter
sums those (a count does not depend on the order of the middle pieces), so a probe costs
numpy's sum over positions instead of a joined text and a dictionary look-up per piece, and
the work of a sample grows with the tokens of the row it writes, not with the probes times
the tokens.

The contract, tested for every generator that tallies (tests/builder/test_tally.py): for the
same sample and size, `first + middle + last` holds exactly the pieces of `draft(...).pieces`
(the middle in any order), and the counter's count of the tally equals its count of the draft;
the fitter also checks, on every sample, that the draft it keeps counts what its tally did.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np


@dataclass(frozen=True)
class Gather:
    """The pieces `table[i]` for the positions `ids` (an int array or a slice) of a table that
    outlives the draft (a word pool, a sample's lines), so its pieces' counts are kept by
    position. The table may grow (a sample's lines, drawn as larger sizes need them); a
    position's piece never changes."""

    table: Sequence[str]
    ids: Union[np.ndarray, slice]

    def pieces(self) -> list[str]:
        if isinstance(self.ids, slice):
            return list(self.table[self.ids])
        return [self.table[i] for i in self.ids.tolist()]


Run = Union[Gather, tuple]  # a Gather, or literal pieces


@dataclass(frozen=True)
class Tally:
    """The pieces of one draft: `first` (its first two), `middle` (runs, in any order) and
    `last` (its last few: where the counter's frame ends), and its answer prefix and refine
    (`Draft`'s)."""

    first: tuple[str, str]
    middle: tuple[Run, ...]
    last: tuple[str, ...]
    answer_prefix: str
    refine: Callable[[str], tuple[str, ...]] | None = None

    def middle_pieces(self) -> list[str]:
        """The middle's pieces (for tests and fallbacks; a counter sums runs instead)."""
        return list(itertools.chain.from_iterable(
            run.pieces() if isinstance(run, Gather) else run for run in self.middle))

    def size(self) -> int:
        """How many pieces the draft holds."""
        n = 2 + len(self.last)
        for run in self.middle:
            if isinstance(run, Gather):
                n += len(range(*run.ids.indices(len(run.table)))) \
                    if isinstance(run.ids, slice) else len(run.ids)
            else:
                n += len(run)
        return n
