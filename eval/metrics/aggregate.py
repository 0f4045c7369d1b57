"""RULER's cross-task and cross-length aggregation (the paper's Table 3 columns).

Upstream computes none of this in code (NVIDIA/RULER `scripts/eval/evaluate.py` stops at
per-task scores); the published numbers are (notes/upstream-ruler.md §10):
- per length: the plain mean of the 13 task scores (issue #10's Gemini example, issue #86);
- Avg.: the plain mean over the lengths;
- wAvg. (inc) / (dec): weights increasing / decreasing linearly with length, k/21 over
  4K..128K (maintainer, issue #82);
- effective length: the largest length L whose score exceeds a threshold — Llama-2-7B's
  4K score, 85.6 — at L and at every shorter length (README: "by exceeding a qualitative
  threshold"; "<4K" for models that fail already at 4K).
For other length sets the weights generalise to k / (1 + 2 + ... + n), which is k/21 for the
paper's six lengths.

Other benchmarks define other columns: which ones, and how a length's tasks aggregate, is the
benchmark's own record's to say (`Benchmark.aggregation`, a `catalog.benchmarks.Aggregation`: a
benchmark without weighted averages and an effective length gets the per-length aggregate and
its average over lengths only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ruler.catalog.benchmarks import Aggregation

#: Llama-2-7B-chat's mean at 4K (RULER README and paper Table 3).
DEFAULT_THRESHOLD = 85.6

#: Every column of the paper's Table 3 (the default of `summarize`).
TABLE3 = Aggregation(weighted=True, effective_length=True)


def length_weights(lengths: Sequence[int], increasing: bool = True) -> dict[int, float]:
    """Linear weights over the sorted lengths: k / sum(1..n), reversed for `increasing=False`."""
    ordered = sorted(lengths)
    n = len(ordered)
    total = n * (n + 1) / 2
    ks = range(1, n + 1) if increasing else range(n, 0, -1)
    return {L: k / total for L, k in zip(ordered, ks)}


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def weighted_average(by_length: Mapping[int, float], increasing: bool) -> float:
    weights = length_weights(list(by_length), increasing)
    return sum(weights[L] * v for L, v in by_length.items())


def effective_length(by_length: Mapping[int, float | None],
                     threshold: float = DEFAULT_THRESHOLD) -> int | None:
    """Largest L with score > threshold at L and every shorter length; None if the shortest fails.

    A length without a score (None: not evaluated, every row skipped) ends the run of passing
    lengths: nothing longer can be claimed without it.
    """
    best = None
    for L in sorted(by_length):
        score = by_length[L]
        if score is None or not score > threshold:
            break
        best = L
    return best


def format_length(L: int) -> str:
    """4096 -> '4K', 131072 -> '128K', 1000 -> '1000' (the paper's column labels)."""
    if L >= 1024 and L % 1024 == 0:
        k = L // 1024
        return f"{k // 1024}M" if k >= 1024 and k % 1024 == 0 else f"{k}K"
    return str(L)


def format_effective(L: int | None, lengths: Sequence[int]) -> str:
    if L is None:
        return f"< {format_length(min(lengths))}" if lengths else "n/a"
    return format_length(L)


@dataclass(frozen=True)
class Summary:
    """The Table 3 columns for one model."""

    by_length: dict[int, float | None]  # mean over tasks per length (None: incomplete)
    avg: float | None
    wavg_inc: float | None
    wavg_dec: float | None
    effective_length: int | None
    threshold: float
    partial: bool = False  # rows asked for have no result: no effective length, no averages
    # how the benchmark aggregates (whether it has weighted averages and an effective length)
    aggregation: Aggregation = TABLE3

    @property
    def has_effective_length(self) -> bool:
        """Whether the benchmark defines an effective length (and its report's head with it)."""
        return self.aggregation.effective_length

    @property
    def effective_label(self) -> str:
        if not self.has_effective_length:
            return "n/a"
        if self.partial:
            return PARTIAL_LABEL
        return format_effective(self.effective_length, list(self.by_length))


#: What the report shows instead of a headline number over a partial selection.
PARTIAL_LABEL = "n/a (partial)"


def summarize(by_length: Mapping[int, float | None],
              threshold: float = DEFAULT_THRESHOLD, partial: bool = False,
              aggregation: Aggregation | None = None) -> Summary:
    """Avg, wAvg (inc/dec) and effective length from per-length scores, as `aggregation` has
    them (default: all of Table 3's).

    Averages over lengths are only given when every length has a score: an average over a
    subset would silently change what the number means. `partial`: some rows that were asked
    for have no result, so none of the three is given; a length's passing score says nothing
    about a longer one whose rows are missing.
    """
    complete = all(v is not None for v in by_length.values()) and bool(by_length) \
        and not partial
    scores = {L: float(v) for L, v in by_length.items() if v is not None}
    aggregation = aggregation or TABLE3
    weighted = complete and aggregation.weighted
    return Summary(
        by_length=dict(sorted(by_length.items())),
        avg=mean(list(scores.values())) if complete else None,
        wavg_inc=weighted_average(scores, True) if weighted else None,
        wavg_dec=weighted_average(scores, False) if weighted else None,
        effective_length=None if partial or not aggregation.effective_length
        else effective_length(by_length, threshold),
        threshold=threshold,
        partial=partial,
        aggregation=aggregation,
    )
