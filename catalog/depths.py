"""Depth bins: where in the context a gold item sits, cut into N equal bins.

A row's `gold_depths` place each gold item (needle, gold document, variable line) as a fraction
of the context's tokens: 0 = the start of the haystack, 1 = its end. Bin b of N is the
half-open interval [b/N, (b+1)/N); depth 1.0 belongs to the last bin. The position-controlled
builds (`ruler build --depths N`) put sample i's gold items in bin i mod N, `ruler verify`
checks it, and `ruler report` bins recorded depths the same way, so all three share
`bin_of`. Which of a row's depths a family places, and how the evaluator counts them, is the
family's (`ruler.catalog.family.TaskFamily`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ruler.kernel.errors import RulerError

#: np.round(np.linspace(0, 100, num=40)).astype(int): upstream's needle depths (in percent)
#: for essay haystacks; a needle goes in before sentence int(sentences * depth / 100).
DEPTHS = (0, 3, 5, 8, 10, 13, 15, 18, 21, 23, 26, 28, 31, 33, 36, 38, 41, 44, 46, 49, 51, 54,
          56, 59, 62, 64, 67, 69, 72, 74, 77, 79, 82, 85, 87, 90, 92, 95, 97, 100)

#: More bins than this would leave some bins with a single point of upstream's 40-point grid
#: and no room for the gold item's token depth to vary inside them.
MAX_DEPTH_BINS = 20


def check_depth_bins(bins: int) -> None:
    if not isinstance(bins, int) or isinstance(bins, bool) or not 2 <= bins <= MAX_DEPTH_BINS:
        raise RulerError(f"--depths must be an integer from 2 to {MAX_DEPTH_BINS}, got {bins!r}")


def bin_of(depth: float, bins: int) -> int:
    """The bin of a recorded depth: floor(depth * bins), clamped to 0..bins-1.

    Rounding to 9 decimals first keeps a depth stored as a float (p / n) in the bin its exact
    value falls in when that value is a bin edge (0.3 * 10 must be bin 3, never 2).
    """
    return min(bins - 1, max(0, math.floor(round(depth * bins, 9))))


@dataclass(frozen=True)
class DepthBin:
    """Bin `index` of `bins` equal bins of [0, 1]."""

    index: int
    bins: int

    @property
    def lo(self) -> float:
        return self.index / self.bins

    @property
    def hi(self) -> float:
        return (self.index + 1) / self.bins

    @property
    def centre(self) -> float:
        return (self.index + 0.5) / self.bins

    @property
    def width(self) -> float:
        return 1 / self.bins

    def contains(self, depth: float) -> bool:
        return bin_of(depth, self.bins) == self.index

    def label(self) -> str:
        """'0.3-0.4', for tables and plots."""
        return f"{self.lo:.2g}-{self.hi:.2g}"


def sample_bin(index: int, bins: int) -> DepthBin:
    """The bin sample `index` of a depth-swept build puts its gold items in."""
    return DepthBin(index % bins, bins)
