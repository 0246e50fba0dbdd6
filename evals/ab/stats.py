"""Paired statistics: bootstrap confidence intervals, the exact sign test, exact McNemar, Holm.

The exact tests use binomial sums from math.comb, so they need nothing installed; the
bootstrap uses numpy when it is there (fast) and the standard library otherwise.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def binomial_two_sided(k: int, n: int) -> float:
    """P-value of k successes in n fair coin flips, two-sided (doubling the smaller tail)."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def sign_test(diffs: Sequence[float]) -> tuple[float, int, int, int]:
    """(p, how many differences are positive, negative, zero); ties carry no information and are dropped."""
    pos = sum(d > 0 for d in diffs)
    neg = sum(d < 0 for d in diffs)
    return binomial_two_sided(pos, pos + neg), pos, neg, len(diffs) - pos - neg


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, int, int]:
    """(p, pairs only A got right, pairs only B got right): the exact binomial test on discordant pairs."""
    only_a = sum(x and not y for x, y in zip(a, b))
    only_b = sum(y and not x for x, y in zip(a, b))
    return binomial_two_sided(only_a, only_a + only_b), only_a, only_b


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values: the family-wise error stays at most alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def bootstrap_means(columns: Sequence[Sequence[float]], resamples: int, seed: int, use_numpy: bool = True) -> list[list[float]]:
    """Means of each column over `resamples` resamplings of the rows (the same rows for every column,
    which keeps paired quantities paired)."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        return [[] for _ in columns]
    if use_numpy:
        try:
            import numpy as np
        except ImportError:
            use_numpy = False
    if use_numpy:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(resamples, n))
        return [np.asarray(col, dtype=float)[idx].mean(axis=1).tolist() for col in columns]
    rng = random.Random(seed)
    out: list[list[float]] = [[] for _ in columns]
    for _ in range(resamples):
        rows = [rng.randrange(n) for _ in range(n)]
        for j, col in enumerate(columns):
            out[j].append(sum(col[i] for i in rows) / n)
    return out


def percentile_interval(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The central `level` interval of bootstrap samples (linear interpolation between order statistics)."""
    xs = sorted(samples)
    if not xs:
        return math.nan, math.nan

    def q(p: float) -> float:
        pos = p * (len(xs) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    tail = (1 - level) / 2
    return q(tail), q(1 - tail)
