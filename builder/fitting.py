"""Fit one sample to the largest haystack whose exact token length fits the budget.

Upstream searches the size once per (task, length) with probes that consume the global RNG,
then shrinks per sample in a `while True` loop that never ends when nothing fits. Here each
sample is fitted on its own: exact counts bracket the size until `t(n) <= L < t(n + 1)`.
Every probe is a pure function of the sample's seed, so the result does not depend on which
other samples, tasks or lengths were built. The search always terminates: the bracket
shrinks every step, and a sample whose smallest haystack does not fit raises TooShortError.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ruler.catalog.base import Draft, TaskGenerator
from ruler.catalog.tally import Tally
from ruler.kernel.errors import RulerError, TooShortError

MAX_PROBES = 64


@dataclass(frozen=True)
class FittedSample:
    draft: Draft
    length: int  # prompt tokens (as the model is given them) + the reserved output
    probes: int  # exact counts spent (for the benchmark)


def fit_sample(gen: TaskGenerator, index: int, make_rng: Callable[[], random.Random],
               count: Callable[[Draft], int], max_seq_length: int,
               tally: Callable[[Tally], int | None] | None = None) -> FittedSample:
    """Return sample `index` at the largest size n with length(n) <= max_seq_length.

    Args:
        gen: the task's generator.
        index: sample number.
        make_rng: returns a fresh RNG seeded for this sample (called once per probe).
        count: exact prompt token count of a draft (chat template, prefix, special tokens).
        max_seq_length: the budget L, which includes tokens_to_generate where the task
            reserves its output (`TaskGenerator.reserved_tokens`).
        tally: counts a generator's tally of a size (catalog.tally) as `count` counts
            its draft, or None; where the generator tallies, sizes are measured without
            drafting them, and the size kept is drafted once at the end. Its count is checked
            against the tally's: where they differ, the sample is fitted again from drafts
            alone, so a row is always the one drafting fits.
    """
    if tally is not None:
        fitted = _fit(gen, index, make_rng, count, max_seq_length, tally)
        if fitted is not None:
            return fitted
    fitted = _fit(gen, index, make_rng, count, max_seq_length, None)
    assert fitted is not None  # only a tally's disagreement gives none
    return fitted


def _fit(gen: TaskGenerator, index: int, make_rng: Callable[[], random.Random],
         count: Callable[[Draft], int], max_seq_length: int,
         tally: Callable[[Tally], int | None] | None) -> FittedSample | None:
    """fit_sample's search; None where the kept size's draft does not count what its tally
    did."""
    budget = max_seq_length - gen.reserved_tokens
    lo_n = gen.min_size
    hi_bound = gen.max_size
    measured: dict[int, int] = {}
    # Only the largest draft that fits is kept: at 1M tokens a draft and its pieces are tens
    # of MB, and the sizes probed only ever replace the best fit with a larger one.
    best: dict[int, Draft] = {}

    def measure(n: int) -> int:
        if n not in measured:
            tallied = gen.tally(index, make_rng(), n) if tally is not None else None
            counted = tally(tallied) if tally is not None and tallied is not None else None
            if counted is not None:
                measured[n] = counted
                return counted
            d = gen.draft(index, make_rng(), n)
            measured[n] = count(d)
            if measured[n] <= budget and all(n > m for m in best):
                best.clear()
                best[n] = d
        return measured[n]

    def result(n: int) -> FittedSample | None:
        if n not in best:  # measured from its tally: drafted now, and counted again
            d = gen.draft(index, make_rng(), n)
            if count(d) != measured[n]:
                return None
            best.clear()
            best[n] = d
        return _result(best, measured, n, gen)

    t_min = measure(lo_n)
    if t_min > budget:
        raise TooShortError(gen.spec.name, max_seq_length, t_min + gen.reserved_tokens,
                            too_short_counts(gen))
    if hi_bound is not None and hi_bound <= lo_n:
        return result(lo_n)

    # Tokens per unit from a second probe one calibration step up, then secant steps.
    fit_n, fit_t = lo_n, t_min          # largest size known to fit
    over_n: int | None = hi_bound + 1 if hi_bound is not None else None  # smallest known not to
    step_n = lo_n + gen.calibration_step
    if over_n is not None:
        step_n = min(step_n, over_n - 1)
    slope = None
    for _ in range(MAX_PROBES):
        if over_n is not None and over_n == fit_n + 1:
            break
        n = step_n
        t = measure(n)
        prev_n, prev_t = fit_n, fit_t
        if t <= budget:
            fit_n, fit_t = n, t
        else:
            over_n = n
        if n != prev_n and t != prev_t:
            local = (t - prev_t) / (n - prev_n)
            if local > 0:
                slope = local
        step_n = _next_size(fit_n, fit_t, over_n, budget, slope)
    else:
        raise RulerError(f"task {gen.spec.name}: length search for sample {index} at "
                         f"L={max_seq_length} did not converge in {MAX_PROBES} probes")
    if fit_n == hi_bound and not gen.short_at_bound:  # inputs ran out before the budget did
        raise RulerError(f"task {gen.spec.name} cannot fill L={max_seq_length}: sample "
                         f"{index} reaches {measured[fit_n] + gen.reserved_tokens} "
                         f"tokens with {hi_bound:,} {gen.unit}, the most its inputs hold; "
                         f"build it at a shorter length")
    fitted = result(fit_n)
    floor = gen.top_up_below
    if fitted is not None and floor is not None and fitted.length < floor * max_seq_length \
            and fit_n != hi_bound:
        return _top_up(gen, index, make_rng, count, budget, fitted)
    return fitted


def _top_up(gen: TaskGenerator, index: int, make_rng: Callable[[], random.Random],
            count: Callable[[Draft], int], budget: int, fitted: FittedSample) -> FittedSample:
    """`fitted` (whole units, short of the generator's `top_up_below`) with the most parts of
    the next unit that still fit: bisected, the fewest parts first known to fit (none)."""
    n = fitted.draft.size
    lo, hi = 0, gen.next_unit_parts(index, n)  # every part: the next whole unit, known over
    best, length, probes = fitted.draft, fitted.length, fitted.probes
    while hi - lo > 1:
        mid = (lo + hi) // 2
        d = gen.draft_part(index, make_rng(), n, mid)
        t = count(d)
        probes += 1
        if t <= budget:
            lo, best, length = mid, d, t + gen.reserved_tokens
        else:
            hi = mid
    return FittedSample(draft=best, length=length, probes=probes)


def too_short_counts(gen: TaskGenerator) -> str:
    """What a too-short message counts: the prompt, and the output where it is reserved."""
    return "prompt + tokens_to_generate" if gen.reserved_tokens else "the prompt"


def _next_size(fit_n: int, fit_t: int, over_n: int | None, budget: int,
               slope: float | None) -> int:
    if slope is None:  # no usable slope yet: double
        guess = fit_n * 2
    else:
        # Aim just under the budget; the bracket check closes the last unit.
        guess = fit_n + max(1, int((budget - fit_t) / slope))
    if over_n is not None:
        if guess >= over_n:
            guess = (fit_n + over_n) // 2 if over_n - fit_n > 2 else fit_n + 1
        guess = max(fit_n + 1, min(guess, over_n - 1))
    return max(guess, fit_n + 1)


def _result(best: dict[int, Draft], measured: dict[int, int], n: int, gen) -> FittedSample:
    return FittedSample(draft=best[n], length=measured[n] + gen.reserved_tokens,
                        probes=len(measured))
