"""How sure a RULER number is: 95 % intervals for task scores, their means, and paired
differences between two runs on the same rows.

A task score is the mean of per-row values in [0, 1] (times 100). Where every row is 0 or 1 (the
single-needle tasks, qa under `string_match_part`), the score is a binomial proportion and gets
the Wilson score interval, which keeps its coverage near 95 % at the 0 and 100 ends where the
normal approximation collapses to a point. Where rows are fractional (`string_match_all` over
several references: needles, variable chains, word lists), no closed form fits, and a
percentile bootstrap over rows is used. Means over tasks (a length's column) and the weighted
averages resample the rows of every task independently (a stratified bootstrap), which is how
the sample was drawn: a fixed number of rows per task and length.

Paired comparisons (two runs on the same rows) test the per-row differences: McNemar's exact
test where both runs' rows are binary (only discordant rows carry information), else a paired
bootstrap; the interval of the difference is a paired bootstrap in both cases.

Every bootstrap draws from a generator seeded by a fixed constant and the cell it serves, so a
report is the same bytes each time it is written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_DRAWS = 2000
_SEED = "ruler-intervals/1"


def method_text(weighted_averages: bool) -> str:
    """How the intervals are made, in words: of the means over tasks, and of the weighted
    averages where the report names them (a benchmark's report hooks say whether it does)."""
    means = "Means over tasks" + " and the weighted averages" * weighted_averages
    return (
        "95 % intervals: Wilson score interval where every row of a cell scores 0 or 1; "
        f"otherwise a percentile bootstrap over the cell's rows ({BOOTSTRAP_DRAWS} draws). "
        f"{means}: a bootstrap that resamples each task's rows independently. Paired "
        "differences of two runs on the same rows: McNemar's exact test on binary rows, else a "
        "paired bootstrap; the interval of a difference is a paired bootstrap. Bootstrap draws "
        "are seeded, so reports are reproducible.")


@dataclass(frozen=True)
class Interval:
    """A 95 % interval on the 0..100 scale, and how it was made."""

    low: float
    high: float
    method: str  # "wilson", "bootstrap", "paired bootstrap", "exact" (a constant difference)

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_json(self) -> list[float]:
        return [round(self.low, 2), round(self.high, 2)]


def _rng(*parts: object) -> np.random.Generator:
    """A generator for one cell: a stable hash of what the interval is for (never `hash()`)."""
    digest = hashlib.sha256("\0".join(map(str, (_SEED, *parts))).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _values(rows: Sequence[float]) -> np.ndarray:
    values = np.asarray(rows, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("an interval needs at least one row value")
    if np.isnan(values).any() or (values < 0).any() or (values > 1).any():
        raise ValueError("row values must lie in [0, 1]")
    return values


def is_binary(rows: Sequence[float]) -> bool:
    values = np.asarray(rows, dtype=float)
    return bool(np.isin(values, (0.0, 1.0)).all())


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval of successes/n, on 0..100."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    # scipy.stats.norm.ppf is this function (the same bits), but importing scipy.stats takes
    # ~0.9 s of every `ruler score` and `ruler report`, scipy.special ~0.4 s
    from scipy.special import ndtri  # noqa: PLC0415 (scipy only when a report asks)

    z = float(ndtri(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 of n (n of n) the bound is exactly 0 (1); rounding would leave 1e-14 off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low * 100, high * 100, "wilson")


def _percentile(draws: np.ndarray, method: str) -> Interval:
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Interval(float(low) * 100, float(high) * 100, method)


def score_interval(rows: Sequence[float], *, key: object = "") -> Interval:
    """The interval of one task x length score from its rows' values (0..1)."""
    values = _values(rows)
    if is_binary(values):
        return wilson(int(values.sum()), int(values.size))
    draws = _rng("score", key).choice(values, size=(BOOTSTRAP_DRAWS, values.size)).mean(axis=1)
    return _percentile(draws, "bootstrap")


def _stratified_means(cells: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of each cell's mean: shape (draws, cells)."""
    return np.stack([rng.choice(c, size=(BOOTSTRAP_DRAWS, c.size)).mean(axis=1)
                     for c in cells], axis=1)


def weighted_mean_interval(cells: Sequence[Sequence[float]], weights: Sequence[float], *,
                           key: object = "") -> Interval:
    """The interval of sum(w_i * mean(cell_i)) / sum(w): a length's mean over tasks (equal
    weights), or the weighted averages over lengths (the cells of every length and task, each
    weighted by its length's weight divided by the tasks at that length)."""
    arrays = [_values(c) for c in cells]
    w = np.asarray(weights, dtype=float)
    if len(arrays) != w.size or w.sum() <= 0:
        raise ValueError("one positive weight per cell is needed")
    draws = _stratified_means(arrays, _rng("mean", key)) @ (w / w.sum())
    return _percentile(draws, "bootstrap")


@dataclass(frozen=True)
class PairedDifference:
    """Run A minus run B on the same rows (0..100)."""

    rows: int
    difference: float
    interval: Interval
    p_value: float
    test: str  # "mcnemar" or "paired bootstrap"
    a_only: int = 0  # binary rows right in A only / in B only (McNemar's discordant pairs)
    b_only: int = 0

    @property
    def significant(self) -> bool:
        return self.p_value < 1 - CONFIDENCE


def paired_difference(a: Sequence[float], b: Sequence[float], *,
                      key: object = "") -> PairedDifference:
    """Compare two runs row by row (a[i] and b[i] are the same row's values)."""
    x, y = _values(a), _values(b)
    if x.size != y.size:
        raise ValueError(f"paired runs need the same rows: {x.size} vs {y.size}")
    d = x - y
    rng = _rng("paired", key)
    draws = rng.choice(d, size=(BOOTSTRAP_DRAWS, d.size)).mean(axis=1)
    interval = (Interval(float(d[0]) * 100, float(d[0]) * 100, "exact") if np.all(d == d[0])
                else _percentile(draws, "paired bootstrap"))
    if is_binary(x) and is_binary(y):
        from scipy.stats import binomtest  # noqa: PLC0415

        a_only, b_only = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        p = 1.0 if a_only + b_only == 0 else float(
            binomtest(a_only, a_only + b_only, 0.5).pvalue)
        return PairedDifference(int(x.size), float(d.mean()) * 100, interval, p, "mcnemar",
                                a_only, b_only)
    if np.all(d == 0):
        return PairedDifference(int(x.size), 0.0, interval, 1.0, "paired bootstrap")
    # Two-sided bootstrap p-value: how often the centred resampled mean is as far from 0 as
    # the observed one (the null shifts the differences to mean 0).
    centred = draws - d.mean()
    p = float((np.abs(centred) >= abs(d.mean())).mean())
    return PairedDifference(int(x.size), float(d.mean()) * 100, interval,
                            max(p, 1 / BOOTSTRAP_DRAWS), "paired bootstrap")


def uncertain_lengths(by_length: Mapping[int, Interval | None], threshold: float) -> list[int]:
    """Lengths whose mean's interval contains the effective-length threshold: there the
    pass/fail decision (and so the effective length) could go either way."""
    return sorted(L for L, i in by_length.items() if i is not None and i.contains(threshold))
