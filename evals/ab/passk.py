"""pass@k and pass^k over several runs of each task (several seeds, or several batches of the same tasks).

For a task run n times with c successes, the unbiased estimators (Chen et al. 2021; Yao et al.
2024, τ-bench) are

    pass@k = 1 − C(n−c, k) / C(n, k)    the chance that at least one of k runs drawn from the n succeeds
    pass^k = C(c, k) / C(n, k)          the chance that all k of them succeed

and a batch's value is their mean over the tasks with at least k runs (tasks with fewer are left
out, and named). Its interval is a percentile bootstrap over tasks: the runs of a task are not
independent of each other, the tasks are. Two batches are compared task by task on the tasks both
ran at least k times: the mean difference B − A, its bootstrap interval, and the bootstrap test of
a zero mean (the differences shifted to mean zero).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from core.errors import HarnessError
from evals.ab.records import RunRecord
from evals.stats import bootstrap_means, percentile_interval

NAME = re.compile(r"^pass([@^])([1-9][0-9]*)$")


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 − C(n−c, k)/C(n, k), as a product so large n stays exact enough: 1 − Π_{i=n−c+1..n} (1 − k/i)."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k)/C(n, k) = Π_{i=0..k−1} (c − i)/(n − i)."""
    _check(n, c, k)
    return math.prod((c - i) / (n - i) for i in range(k)) if c >= k else 0.0


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")


ESTIMATORS = {"@": pass_at_k, "^": pass_hat_k}


def parse_metric(name: str) -> tuple[str, int] | None:
    """('@' or '^', k) for a name such as pass@3 or pass^3; None for any other name."""
    found = NAME.match(name)
    return (found.group(1), int(found.group(2))) if found else None


def tallies(records: list[RunRecord]) -> dict[str, tuple[int, int]]:
    """(runs, successes) per task id, over the runs with a verdict (an ungraded import has none)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        if r.success is None:
            continue
        counts[r.task_id][0] += 1
        counts[r.task_id][1] += bool(r.success)
    return {task: (n, c) for task, (n, c) in sorted(counts.items())}


def per_task(records: list[RunRecord], name: str) -> tuple[dict[str, float], list[str]]:
    """The metric's estimate per task, and the tasks left out for having fewer than k runs."""
    parsed = parse_metric(name)
    if parsed is None:
        raise HarnessError(f"{name!r} is not pass@K or pass^K (K a whole number, e.g. pass@1, pass^3).")
    kind, k = parsed
    values, short = {}, []
    for task, (n, c) in tallies(records).items():
        if n < k:
            short.append(task)
        else:
            values[task] = ESTIMATORS[kind](n, c, k)
    return values, short


@dataclass(frozen=True)
class Estimate:
    name: str  # pass@k or pass^k
    k: int
    tasks: int
    value: float
    low: float
    high: float
    left_out: tuple[str, ...]  # tasks with fewer than k runs

    def as_json(self) -> dict:
        """For a JSON document, which has no NaN: with no task to estimate on, the figures are null."""
        figures = {"value": self.value, "low": self.low, "high": self.high}
        return {
            "name": self.name,
            "k": self.k,
            "tasks": self.tasks,
            **{key: v if math.isfinite(v) else None for key, v in figures.items()},
            "left_out": list(self.left_out),
        }


def estimate(
    records: list[RunRecord], name: str, level: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Estimate:
    """A batch's pass@k or pass^k with its bootstrap interval over tasks."""
    values, short = per_task(records, name)
    _, k = parse_metric(name) or ("@", 0)
    x = list(values.values())
    if not x:
        return Estimate(name, k, 0, math.nan, math.nan, math.nan, tuple(short))
    if len(x) == 1:  # resampling one task gives it back every time: no spread, so no interval
        return Estimate(name, k, 1, x[0], math.nan, math.nan, tuple(short))
    low, high = percentile_interval(bootstrap_means([x], resamples, seed)[0], level)
    return Estimate(name, k, len(x), float(np.mean(x)), low, high, tuple(short))


@dataclass(frozen=True)
class Difference:
    tasks: list[str]
    a: list[float]
    b: list[float]
    diff: float
    low: float
    high: float
    p: float


def difference(
    a: list[RunRecord], b: list[RunRecord], name: str, level: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Difference:
    """B − A on the tasks both batches ran at least k times, with its bootstrap interval and test."""
    va, _ = per_task(a, name)
    vb, _ = per_task(b, name)
    tasks = sorted(set(va) & set(vb))
    xa, xb = [va[t] for t in tasks], [vb[t] for t in tasks]
    d = np.asarray(xb, dtype=float) - np.asarray(xa, dtype=float)
    if not tasks:
        return Difference(tasks, xa, xb, math.nan, math.nan, math.nan, 1.0)
    mean = float(d.mean())
    if len(tasks) == 1:  # resampling one task gives it back every time: no spread, so no interval and no test
        return Difference(tasks, xa, xb, mean, math.nan, math.nan, 1.0)
    boot, centred = bootstrap_means([d, d - mean], resamples, seed)
    low, high = percentile_interval(boot, level)
    # the share of resamples, under a zero mean, at least as far from zero as the mean seen
    p = 1.0 if mean == 0 else float(np.mean(np.abs(centred) >= abs(mean) - 1e-12))
    return Difference(tasks, xa, xb, mean, low, high, p)
