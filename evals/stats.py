"""Paired statistics for A/B comparisons, on scipy.

Amounts (steps, tokens, cost, time) are judged by the paired t-test, which has power with a
handful of pairs. Amounts above zero in every run are compared as ratios B / A (the t-test on
their logs, giving a geometric mean ratio), since a policy tends to save a share of a long task's
tokens rather than a fixed number; amounts with zeros, as differences B − A. The t-test assumes
the mean of what it tests is roughly normal, which holds when that is not heavy-tailed or the
pairs are many. When there are enough pairs to tell (8 or more) and a Shapiro–Wilk test rejects
normality at the 1% level, the Wilcoxon signed-rank test judges instead, with a bootstrap interval.
Outcomes (success) are judged by the exact McNemar test on the discordant pairs, with Newcombe's
interval for the difference of paired rates; a single batch's rate gets a Wilson interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
from scipy import stats

HEAVY_TAIL_MIN_PAIRS = 8
HEAVY_TAIL_ALPHA = 0.01

Floats: TypeAlias = Sequence[float] | np.ndarray  # a column of numbers, as given or as numpy computed it


@dataclass(frozen=True)
class PairedResult:
    test: str
    p: float
    diff: float  # the estimate of B − A: mean difference, or difference of rates
    low: float  # its interval
    high: float
    effect: float  # Cohen's d_z on the scale tested (mean / sd); nan for outcomes
    ratio: float = math.nan  # geometric mean of B / A, for amounts above zero in every run
    ratio_low: float = math.nan
    ratio_high: float = math.nan


@dataclass(frozen=True)
class _OneSample:
    test: str
    p: float
    mean: float
    low: float
    high: float
    effect: float


def paired_amounts(
    a: Sequence[float], b: Sequence[float], level: float = 0.95, *, resamples: int = 10_000, seed: int = 0
) -> PairedResult:
    """Compare paired amounts. Amounts above zero in every run (steps, tokens, cost, time) usually
    differ by a share rather than a fixed amount, a long task saving more than a short one, so they
    are tested on the log of B / A; amounts with zeros, on B − A."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = xb - xa
    if len(d) and (xa > 0).all() and (xb > 0).all():
        r = _one_sample(np.log(xb / xa), level, resamples, seed)
        _, low, high = mean_interval(d, level)
        return PairedResult(
            r.test + " on log ratios" if len(d) > 1 else r.test,  # one pair: no test, on logs or otherwise
            r.p,
            float(d.mean()),
            low,
            high,
            r.effect,
            math.exp(r.mean),
            math.exp(r.low),
            math.exp(r.high),
        )
    r = _one_sample(d, level, resamples, seed)
    return PairedResult(r.test, r.p, r.mean, r.low, r.high, r.effect)


def _one_sample(x: np.ndarray, level: float, resamples: int, seed: int) -> _OneSample:
    """Is the mean of x zero: the t-test, or Wilcoxon's signed-rank test when x is heavy-tailed."""
    n = len(x)
    if n == 0:
        return _OneSample("none (no pairs)", 1.0, math.nan, math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if n == 1:
        return _OneSample("none (one pair)", 1.0, mean, math.nan, math.nan, math.nan)
    sd = float(x.std(ddof=1))
    if sd == 0 or sd < 1e-12 * abs(mean):
        # every pair differs by the same amount: the t statistic is infinite (or 0/0 when nothing differs)
        return _OneSample(
            "paired t-test", 0.0 if mean else 1.0, mean, mean, mean, math.copysign(math.inf, mean) if mean else 0.0
        )
    effect = mean / sd
    if n >= HEAVY_TAIL_MIN_PAIRS and stats.shapiro(x).pvalue < HEAVY_TAIL_ALPHA:
        nonzero = x[x != 0]
        p = float(stats.wilcoxon(nonzero).pvalue) if len(nonzero) else 1.0
        low, high = percentile_interval(bootstrap_means([x], resamples, seed)[0], level)
        return _OneSample("Wilcoxon signed-rank", p, mean, low, high, effect)
    se = sd / math.sqrt(n)
    p = float(2 * stats.t.sf(abs(mean / se), n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
    return _OneSample("paired t-test", p, mean, mean - half, mean + half, effect)


def paired_outcomes(a: Sequence[bool], b: Sequence[bool], level: float = 0.95) -> tuple[PairedResult, int, int]:
    """(result, pairs only A got right, pairs only B got right): exact McNemar and Newcombe's interval."""
    only_a = sum(bool(x) and not y for x, y in zip(a, b, strict=True))
    only_b = sum(bool(y) and not x for x, y in zip(a, b, strict=True))
    n = len(a)
    if n == 0:
        return PairedResult("McNemar (exact)", 1.0, math.nan, math.nan, math.nan, math.nan), 0, 0
    p = mcnemar_exact(only_a, only_b)
    both = sum(bool(x) and bool(y) for x, y in zip(a, b, strict=True))
    low, high = newcombe_paired(both, only_b, only_a, n - both - only_a - only_b, level)
    return PairedResult("McNemar (exact)", p, (only_b - only_a) / n, low, high, math.nan), only_a, only_b


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The exact binomial test on the discordant pairs (p = 1 when there are none)."""
    if only_a + only_b == 0:
        return 1.0
    return float(stats.binomtest(only_a, only_a + only_b).pvalue)


def wilson(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a rate: never of zero width, even for 0 or n out of n. Successes
    may be fractional (a chess score counts a draw as half a win)."""
    if n == 0:
        return math.nan, math.nan
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def poisson_rate(events: int, exposure: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) interval for events per unit of exposure, e.g. wrong moves per move."""
    if exposure <= 0:
        return math.nan, math.nan
    tail = (1 - level) / 2
    low = float(stats.chi2.ppf(tail, 2 * events)) / 2 if events else 0.0
    high = float(stats.chi2.ppf(1 - tail, 2 * events + 2)) / 2
    return low / exposure, high / exposure


def newcombe_paired(
    both: int, only_first: int, only_second: int, neither: int, level: float = 0.95
) -> tuple[float, float]:
    """Interval for p1 − p2, the difference of two paired rates (Newcombe 1998, square-and-add of
    Wilson intervals with a continuity-corrected correlation, as in Fagerland, Lydersen and Laake)."""
    n = both + only_first + only_second + neither
    first, second = both + only_first, both + only_second
    p1, p2 = first / n, second / n
    l1, u1 = wilson(first, n, level)
    l2, u2 = wilson(second, n, level)
    margins = first * (n - first) * second * (n - second)
    cross = both * neither - only_first * only_second
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(margins)
    estimate = p1 - p2
    low = estimate - math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)))
    high = estimate + math.sqrt(max(0.0, (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)))
    return max(-1.0, low), min(1.0, high)


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval for one batch's mean (nan bounds with fewer than two values)."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return mean, mean - half, mean + half


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values: the family-wise error stays at most alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def bootstrap_means(columns: Sequence[Floats], resamples: int, seed: int) -> list[np.ndarray]:
    """Means of each column over `resamples` resamplings of the rows (the same rows for every column,
    which keeps paired quantities paired)."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        return [np.empty(0) for _ in columns]
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    return [np.asarray(col, dtype=float)[idx].mean(axis=1) for col in columns]


def percentile_interval(samples: Floats, level: float = 0.95) -> tuple[float, float]:
    """The central `level` interval of bootstrap samples."""
    if len(samples) == 0:
        return math.nan, math.nan
    tail = (1 - level) / 2
    low, high = np.quantile(np.asarray(samples, dtype=float), [tail, 1 - tail])
    return float(low), float(high)
