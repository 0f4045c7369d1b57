"""Size-stable random selection for generators, and the word-count answer check.

The fitter re-drafts a sample at several sizes with identically seeded RNGs. Drawing "the first
k items of one random permutation" (instead of `random.sample(pop, k)`, whose picks change
with k) keeps the content of a smaller draft a prefix of a larger one, so token counts grow
smoothly with size and the search converges in few probes. The distribution is the same as
`random.sample`: a uniformly random ordered k-subset.
"""

from __future__ import annotations

import random
from typing import AbstractSet, Mapping, Sequence

from ruler.kernel.rng import below


def permutation_prefix(rng: random.Random, n: int, k: int,
                       exclude: AbstractSet[int] = frozenset()) -> list[int]:
    """The first k elements of a uniform random permutation of range(n) without `exclude`.

    Sparse Fisher-Yates: O(k + |exclude|) time and memory, whatever n is. Draws depend only on
    (n, exclude) and on how many elements are taken, so a larger k extends a smaller one.
    """
    if k < 0:
        raise ValueError(f"cannot take {k} elements")
    moved: dict[int, int] = {}
    out: list[int] = []
    i = 0
    while len(out) < k:
        if i >= n:
            raise ValueError(f"cannot take {k} of {n} elements excluding {len(exclude)}")
        j = i + below(rng, n - i)  # rng.randrange(i, n), the same draw without its overhead
        picked = moved.get(j, j)
        moved[j] = moved.get(i, i)
        i += 1
        if picked not in exclude:
            out.append(picked)
    return out


def draw_unique(rng: random.Random, count: int, draw, forbidden: AbstractSet[str] = frozenset()
                ) -> list[str]:
    """`count` distinct strings from `draw(rng)`, redrawing duplicates and forbidden ones."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        s = draw(rng)
        if s not in forbidden:
            seen.setdefault(s, None)
    return list(seen)


def strictly_most_frequent(counts: Mapping[str, int], answers: Sequence[str]) -> str | None:
    """None if every answer occurs strictly more often than every other word, else why not.

    The unambiguity check of the word-counting tasks, for `check_row`.
    """
    low = min(counts[a] for a in answers)
    asked = set(answers)
    others = [c for w, c in counts.items() if w not in asked]
    if others and max(others) >= low:
        return (f"outputs are not strictly the most frequent: an output occurs {low} times, "
                f"another word {max(others)} times")
    return None
