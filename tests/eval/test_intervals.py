"""Intervals and paired tests checked on hand-made cases (issue 25.4): known binomial counts
against scipy's own Wilson interval and the closed form, seeded bootstraps that repeat, coverage
measured by simulation, and paired data with a known difference."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from ruler.eval.metrics.intervals import (
    Interval,
    paired_difference,
    score_interval,
    uncertain_lengths,
    weighted_mean_interval,
    wilson,
)


@pytest.mark.parametrize("k,n", [(7, 20), (0, 30), (30, 30), (1, 1), (250, 500), (499, 500)])
def test_wilson_equals_scipys_reference_interval(k, n):
    ours = wilson(k, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert ours.low == pytest.approx(ref.low * 100, abs=1e-9)
    assert ours.high == pytest.approx(ref.high * 100, abs=1e-9)


@pytest.mark.subprocess
def test_a_wilson_interval_is_scipys_normal_quantile_without_importing_scipy_stats():
    """scipy.special's ndtri is what norm.ppf computes, bit for bit; importing scipy.stats for
    it took ~0.9 s of every `ruler score` and `ruler report`."""
    import subprocess
    import sys

    from scipy.special import ndtri
    from scipy.stats import norm

    assert all(float(ndtri(p)) == float(norm.ppf(p)) for p in (0.9, 0.95, 0.975, 0.995))
    code = ("import sys; from ruler.eval.metrics.intervals import wilson; wilson(7, 20); "
            "print('scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_wilson_by_hand():
    """7 of 20: centre (p + z²/2n)/(1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²)/(1 + z²/n)."""
    i = wilson(7, 20)
    assert (round(i.low, 2), round(i.high, 2)) == (18.12, 56.71)
    assert wilson(0, 30).low == 0 and round(wilson(0, 30).high, 2) == 11.35
    assert wilson(30, 30).high == 100 and round(wilson(30, 30).low, 2) == 88.65


def test_binary_rows_get_wilson_and_fractional_rows_a_seeded_bootstrap():
    assert score_interval([1, 0, 1, 1]) == wilson(3, 4)
    rows = np.random.default_rng(0).uniform(size=60).round(2)
    first, again = score_interval(rows, key="cwe/4096"), score_interval(rows, key="cwe/4096")
    assert first == again and first.method == "bootstrap"  # reproducible reports
    assert first.contains(rows.mean() * 100) and first.high - first.low > 0
    more = score_interval(np.tile(rows, 16), key="cwe/4096")
    assert more.high - more.low < (first.high - first.low) / 2  # ~1/sqrt(n) narrower


def test_coverage_is_near_95_percent_by_simulation():
    """The intervals hold the true mean about 95 % of the time: 400 binomial cells (p = 0.3,
    n = 50) and 200 fractional ones (rows ~ Beta(2, 5), n = 100)."""
    rng = np.random.default_rng(1)
    hits = sum(score_interval(rng.binomial(1, 0.3, 50)).contains(30.0) for _ in range(400))
    assert 0.92 <= hits / 400 <= 0.98
    hits = sum(score_interval(rng.beta(2, 5, 100), key=i).contains(100 * 2 / 7)
               for i in range(200))
    assert 0.89 <= hits / 200 <= 0.99


def test_a_mean_over_tasks_is_narrower_than_its_tasks():
    rng = np.random.default_rng(2)
    cells = [rng.binomial(1, 0.6, 100) for _ in range(13)]
    mean = weighted_mean_interval(cells, [1] * 13, key="4096")
    centre = np.mean([c.mean() for c in cells]) * 100
    assert mean.contains(centre)
    assert mean.high - mean.low < min(score_interval(c).high - score_interval(c).low
                                       for c in cells)
    # weights: all weight on one cell gives that cell's bootstrap interval of its mean
    only = weighted_mean_interval(cells[:2], [1, 0])
    assert only.contains(cells[0].mean() * 100) and not only.contains(cells[1].mean() * 100 + 30)


def test_identical_runs_differ_by_zero_and_not_significantly():
    rows = np.random.default_rng(3).binomial(1, 0.5, 200)
    same = paired_difference(rows, rows)
    assert same.difference == 0 and same.p_value == 1 and not same.significant
    frac = np.random.default_rng(4).uniform(size=200)
    assert not paired_difference(frac, frac).significant


def test_a_damaged_run_is_significantly_worse():
    """Run B is run A with 12 right rows turned wrong: McNemar's exact p = 2 * 0.5^12."""
    a = np.zeros(100)
    a[:60] = 1
    b = a.copy()
    b[:12] = 0
    d = paired_difference(a, b)
    assert (d.a_only, d.b_only, d.test) == (12, 0, "mcnemar")
    assert d.difference == pytest.approx(12.0) and d.p_value == pytest.approx(2 * 0.5 ** 12)
    assert d.significant and d.interval.low > 0


def test_a_known_fractional_difference_is_found():
    rng = np.random.default_rng(5)
    a = rng.uniform(0.2, 0.8, 150)
    b = np.clip(a - 0.1 + rng.normal(0, 0.05, 150), 0, 1)
    d = paired_difference(a, b, key="vt/8192")
    assert d.test == "paired bootstrap" and d.significant
    assert d.interval.contains(10.0) and abs(d.difference - 10) < 2


def test_lengths_whose_interval_holds_the_threshold_are_uncertain():
    by_length = {4096: Interval(90, 97, "bootstrap"), 8192: Interval(80, 88, "bootstrap"),
                 16384: Interval(60, 70, "bootstrap"), 32768: None}
    assert uncertain_lengths(by_length, 85.6) == [8192]


def test_bad_rows_are_refused():
    for bad in ([], [0.5, np.nan], [1.5], [-0.1]):
        with pytest.raises(ValueError):
            score_interval(bad)
    with pytest.raises(ValueError):
        paired_difference([1, 0], [1])
