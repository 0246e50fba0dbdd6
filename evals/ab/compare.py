"""The paired comparison of two batches: per-metric differences with bootstrap intervals,
exact tests, a Holm correction across metrics, and a verdict that says when the data
cannot tell the policies apart."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from evals.ab.pairing import Pair, pair_runs
from evals.ab.records import RunRecord
from evals.ab.stats import bootstrap_means, holm, mcnemar_exact, percentile_interval, sign_test


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    kind: str  # binary | count | usd | seconds
    better: str | None  # higher | lower | None (neither is better in itself)
    value: Callable[[RunRecord], float | bool | None]


METRICS = (
    Metric("success", "success", "binary", "higher", lambda r: r.success),
    Metric("submitted", "submitted", "binary", "higher", lambda r: r.submitted),
    Metric("steps", "steps", "count", "lower", lambda r: r.steps),
    Metric("prompt_tokens", "prompt tokens", "count", "lower", lambda r: r.prompt_tokens),
    Metric("cached_tokens", "cached tokens", "count", None, lambda r: r.cached_tokens),
    Metric("completion_tokens", "completion tokens", "count", "lower", lambda r: r.completion_tokens),
    Metric("cost_usd", "cost (USD)", "usd", "lower", lambda r: r.cost_usd),
    Metric("wall_s", "wall time (s)", "seconds", "lower", lambda r: r.wall_s),
)


@dataclass
class MetricResult:
    name: str
    label: str
    kind: str
    better: str | None
    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean of B − A over the pairs
    ci_low: float
    ci_high: float
    test: str
    p: float
    p_adjusted: float = 1.0
    counts: dict[str, int] = field(default_factory=dict)  # B>A, B<A, ties; or only A, only B
    detectable: bool = False

    @property
    def direction(self) -> str:
        """'better', 'worse' or 'different' for B against A; '' when not detectable."""
        if not self.detectable:
            return ""
        if self.better is None:
            return "different"
        return "better" if (self.diff > 0) == (self.better == "higher") else "worse"


@dataclass
class Verdict:
    distinguishable: bool
    text: str
    differences: list[str]


@dataclass
class TaskRow:
    task_id: str
    seed: int | None
    a: RunRecord
    b: RunRecord


@dataclass
class Comparison:
    a_name: str
    b_name: str
    a_policies: list[str]
    b_policies: list[str]
    pairs: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    alpha: float
    level: float
    resamples: int
    seed: int
    metrics: list[MetricResult]
    notes: list[str]
    verdict: Verdict
    rows: list[TaskRow]
    # for the cost-vs-success chart: (mean, ci_low, ci_high) per batch
    success_a: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    success_b: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_a: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_b: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_label: str = "cost (USD)"


def usable_metrics(pairs: list[Pair], notes: list[str]) -> list[Metric]:
    out = []
    for m in METRICS:
        values = [(m.value(p.a), m.value(p.b)) for p in pairs]
        if any(x is None or y is None for x, y in values):
            notes.append(f"{m.label} is left out: some runs have no value for it (a model missing from the price table).")
            continue
        if m.name == "submitted" and all(p.a.submitted == p.a.success and p.b.submitted == p.b.success for p in pairs):
            continue  # no grader beyond submission: it would repeat `success`
        out.append(m)
    return out


def compare(a: list[RunRecord], b: list[RunRecord], a_name: str = "A", b_name: str = "B", *, resamples: int = 10_000,
            seed: int = 0, alpha: float = 0.05, level: float = 0.95) -> Comparison:
    pairs, lone_a, lone_b = pair_runs(a, b)
    notes: list[str] = []
    metrics = usable_metrics(pairs, notes) if pairs else []
    results = [_test(m, pairs) for m in metrics]
    spend = next((m for m in metrics if m.name == "cost_usd"), None) or next(m for m in METRICS if m.name == "prompt_tokens")
    columns = [[float(m.value(p.b)) - float(m.value(p.a)) for p in pairs] for m in metrics]
    columns += [[float(p.a.success) for p in pairs], [float(p.b.success) for p in pairs],
                [float(spend.value(p.a)) for p in pairs], [float(spend.value(p.b)) for p in pairs]]
    boot = bootstrap_means(columns, resamples, seed) if pairs else [[] for _ in columns]
    for r, samples in zip(results, boot):
        r.ci_low, r.ci_high = percentile_interval(samples, level)
    for r, p_adj in zip(results, holm([r.p for r in results])):
        r.p_adjusted = p_adj
        # both the exact test (after Holm) and the interval must agree that B differs from A
        r.detectable = p_adj < alpha and (r.ci_low > 0 or r.ci_high < 0)
    extra = boot[len(metrics):]
    comparison = Comparison(
        a_name=a_name, b_name=b_name,
        a_policies=sorted({r.policy for r in a}), b_policies=sorted({r.policy for r in b}),
        pairs=len(pairs), unpaired_a=[r.run_id for r in lone_a], unpaired_b=[r.run_id for r in lone_b],
        alpha=alpha, level=level, resamples=resamples, seed=seed, metrics=results, notes=notes,
        verdict=verdict(results, len(pairs), alpha, level, a_name, b_name),
        rows=[TaskRow(p.a.task_id, p.a.seed, p.a, p.b) for p in pairs],
        spend_label=spend.label,
    )
    if pairs:
        comparison.success_a = _summary([float(p.a.success) for p in pairs], extra[0], level)
        comparison.success_b = _summary([float(p.b.success) for p in pairs], extra[1], level)
        comparison.spend_a = _summary([float(spend.value(p.a)) for p in pairs], extra[2], level)
        comparison.spend_b = _summary([float(spend.value(p.b)) for p in pairs], extra[3], level)
    return comparison


def _summary(values: list[float], samples: list[float], level: float) -> tuple[float, float, float]:
    lo, hi = percentile_interval(samples, level)
    return sum(values) / len(values), lo, hi


def _test(m: Metric, pairs: list[Pair]) -> MetricResult:
    xa = [m.value(p.a) for p in pairs]
    xb = [m.value(p.b) for p in pairs]
    n = len(pairs)
    mean_a, mean_b = sum(map(float, xa)) / n, sum(map(float, xb)) / n
    if m.kind == "binary":
        p, only_a, only_b = mcnemar_exact([bool(x) for x in xa], [bool(x) for x in xb])
        test, counts = "McNemar (exact)", {"only A": only_a, "only B": only_b, "both or neither": n - only_a - only_b}
    else:
        p, pos, neg, ties = sign_test([float(y) - float(x) for x, y in zip(xa, xb)])
        test, counts = "sign test (exact)", {"B higher": pos, "B lower": neg, "ties": ties}
    return MetricResult(m.name, m.label, m.kind, m.better, n, mean_a, mean_b, mean_b - mean_a, math.nan, math.nan, test, p,
                        counts=counts)


def describe(r: MetricResult, level: float = 0.95) -> str:
    diff, lo, hi = (100 * r.diff, 100 * r.ci_low, 100 * r.ci_high) if r.kind == "binary" else (r.diff, r.ci_low, r.ci_high)
    unit = " points" if r.kind == "binary" else ""
    fmt = "{:+.3g}" if r.kind == "usd" else "{:+,.1f}"
    return (f"{r.label} {fmt.format(diff)}{unit} ({level:.0%} CI {fmt.format(lo)} to {fmt.format(hi)}; "
            f"{r.test} p={r.p:.2g}, Holm-adjusted {r.p_adjusted:.2g})")


def verdict(results: list[MetricResult], pairs: int, alpha: float, level: float, a_name: str, b_name: str) -> Verdict:
    if pairs == 0:
        return Verdict(False, "No task appears in both batches, so nothing can be compared: pair runs by task id and seed.", [])
    found = [r for r in results if r.detectable]
    family = f"{len(results)} metrics"
    if not found:
        return Verdict(False, (
            f"No detectable difference: on {pairs} paired tasks the data cannot distinguish {b_name} from {a_name} "
            f"(no metric differs at the {alpha:.0%} level after a Holm correction over {family}). "
            "More tasks or repeated seeds would narrow the intervals."), [])
    parts = "; ".join(f"{describe(r, level)}" + (f" — {r.direction} for {b_name}" if r.better else "") for r in found)
    return Verdict(True, f"{b_name} differs from {a_name} on {pairs} paired tasks: {parts}.", [r.name for r in found])
