"""The paired comparison of two batches: one primary metric judged at the significance level as
it is, the secondary metrics judged after a Holm correction among themselves, each with its effect
size and interval, and a verdict that names every metric that differs and by how much.

With several runs per task (seeds, or several batches of the same tasks), the primary metric may be
pass@K or pass^K (evals/ab/passk.py): judged task by task, with the other of the two for the same K
among the secondaries."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import HarnessError
from evals.ab.pairing import Pair, pair_runs
from evals.ab.passk import difference, parse_metric, tallies
from evals.ab.records import RunRecord
from evals.ab.results import MetricResult, describe, p_text
from evals.stats import holm, mean_interval, paired_amounts, paired_outcomes, wilson


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
    # imported runs the price table cannot price: the cost each source recorded (judged only in cost_usd's place)
    Metric("recorded_cost_usd", "cost as recorded (USD)", "usd", "lower", lambda r: r.recorded_cost_usd),
    Metric("wall_s", "wall time (s)", "seconds", "lower", lambda r: r.wall_s),
)
METRIC_NAMES = tuple(m.name for m in METRICS)
DEFAULT_PRIMARY = "success"


@dataclass
class Verdict:
    distinguishable: bool
    headline: str
    findings: list[str]  # one line per metric that differs
    differences: list[str]  # their names

    @property
    def text(self) -> str:
        return f"{self.headline}: {'; '.join(self.findings)}." if self.findings else f"{self.headline}."


@dataclass
class TaskRow:
    task_id: str
    seed: int | None
    a: RunRecord
    b: RunRecord


@dataclass
class Comparison:
    a_name: str  # the folders behind the labels A and B
    b_name: str
    a_policies: list[str]
    b_policies: list[str]
    pairs: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    primary: str
    alpha: float
    level: float
    resamples: int
    seed: int
    metrics: list[MetricResult]
    notes: list[str]
    verdict: Verdict
    rows: list[TaskRow]
    # for the cost-vs-success chart: (mean, low, high) per batch; Wilson for rates, t for means
    success_a: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    success_b: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_a: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_b: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    spend_label: str = "cost (USD)"


def usable_metrics(pairs: list[Pair], notes: list[str]) -> list[Metric]:
    out: list[Metric] = []
    for m in METRICS:
        values = [(m.value(p.a), m.value(p.b)) for p in pairs]
        if m.name == "recorded_cost_usd":
            if any(o.name == "cost_usd" for o in out) or not any(r.recorded_by for p in pairs for r in (p.a, p.b)):
                continue  # the table priced every run, or none was imported: nothing recorded to fall back on
            if any(x is None or y is None for x, y in values):
                notes.append(
                    f"{m.label} is left out too: some runs have no recorded cost (runs of ours, or no cost kept)."
                )
                continue
            by = ", ".join(sorted({r.recorded_by for p in pairs for r in (p.a, p.b)}))
            notes.append(
                f"{m.label} judges cost instead: the cost each run's source recorded ({by}), not a price of ours."
            )
            out.append(m)
            continue
        if m.name == "success" and any(x is None or y is None for x, y in values):
            unknown = sum((x is None) + (y is None) for x, y in values)
            notes.append(
                f"success is left out: {unknown} runs were imported without grades, so whether they succeeded is "
                "unknown (`harness import --grades FILE` grades them); submitted is compared instead."
            )
            continue
        if any(x is None or y is None for x, y in values):
            notes.append(
                f"{m.label} is left out: some runs have no value for it (a model missing from the price table)."
            )
            continue
        if m.name == "submitted" and all(p.a.submitted == p.a.success and p.b.submitted == p.b.success for p in pairs):
            continue  # no grader beyond submission: it would repeat `success`
        out.append(m)
    return out


def compare(
    a: list[RunRecord],
    b: list[RunRecord],
    a_name: str = "A",
    b_name: str = "B",
    *,
    primary: str = DEFAULT_PRIMARY,
    resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    level: float = 0.95,
) -> Comparison:
    passk = parse_metric(primary)
    if primary not in METRIC_NAMES and passk is None:
        raise HarnessError(
            f"unknown primary metric {primary!r}; choose one of {', '.join(METRIC_NAMES)}, or pass@K or pass^K."
        )
    pairs, lone_a, lone_b = pair_runs(a, b)
    notes = [f"{r.run_id}: {note}" for r in [*a, *b] for note in r.journal_notes]
    metrics = usable_metrics(pairs, notes) if pairs else []
    usable = {m.name for m in metrics}
    if primary == DEFAULT_PRIMARY and pairs and primary not in usable and "submitted" in usable:
        primary = "submitted"  # the default asked for; ungraded imports have only this
    if pairs and passk is None and primary not in {m.name for m in metrics}:
        raise HarnessError(
            f"the primary metric {primary!r} has no value for some runs (no price for the model?); "
            "choose another with --primary, or give --price-model."
        )
    results = [_test(m, pairs, level, resamples, seed) for m in metrics]
    if passk is not None:
        results = _passk_results(a, b, passk[1], notes, level, resamples, seed) + results
    secondary = [r for r in results if r.name != primary]
    for r, p_adj in zip(secondary, holm([r.p for r in secondary]), strict=True):
        r.p_adjusted = p_adj
    for r in results:
        if r.name == primary:
            r.primary, r.p_adjusted = True, r.p
        r.detectable = r.p_adjusted < alpha
    spend = next((m for m in metrics if m.kind == "usd"), None) or next(m for m in METRICS if m.name == "prompt_tokens")
    comparison = Comparison(
        a_name=a_name,
        b_name=b_name,
        a_policies=sorted({r.policy for r in a}),
        b_policies=sorted({r.policy for r in b}),
        pairs=len(pairs),
        unpaired_a=[r.run_id for r in lone_a],
        unpaired_b=[r.run_id for r in lone_b],
        primary=primary,
        alpha=alpha,
        level=level,
        resamples=resamples,
        seed=seed,
        metrics=results,
        notes=notes,
        verdict=verdict(results, len(pairs), alpha, level),
        rows=[TaskRow(p.a.task_id, p.a.seed, p.a, p.b) for p in pairs],
        spend_label=spend.label,
    )
    if pairs:
        n = len(pairs)
        for side, runs in (("a", [p.a for p in pairs]), ("b", [p.b for p in pairs])):
            wins = sum(bool(r.success) if "success" in usable else r.submitted for r in runs)
            setattr(comparison, f"success_{side}", (wins / n, *wilson(wins, n, level)))
            mean, low, high = mean_interval([_number(spend, r) for r in runs], level)
            # tokens and dollars are never below zero; a batch of one has no interval (nan), kept as it is
            setattr(comparison, f"spend_{side}", (mean, low if math.isnan(low) else max(0.0, low), high))
    return comparison


def _passk_results(
    a: list[RunRecord], b: list[RunRecord], k: int, notes: list[str], level: float, resamples: int, seed: int
) -> list[MetricResult]:
    """pass@k and pass^k of B against A, task by task over the tasks both ran at least k times."""
    short = sorted(
        {t for runs in (a, b) for t, (n, _) in tallies(runs).items() if n < k} | (set(tallies(a)) ^ set(tallies(b)))
    )
    if short:
        notes.append(
            f"pass@{k} and pass^{k} leave out {len(short)} tasks not run {k} times in both: {', '.join(short)}."
        )
    out = []
    for name in (f"pass@{k}", f"pass^{k}"):
        d = difference(a, b, name, level, resamples, seed)
        if not d.tasks:
            most = max([n for runs in (a, b) for n, _ in tallies(runs).values()], default=0)
            raise HarnessError(
                f"{name} needs tasks that both batches ran at least {k} times; no task has (the most runs of "
                f"one task is {most}). Run more seeds or batches, or choose a smaller K."
            )
        diffs = [y - x for x, y in zip(d.a, d.b, strict=True)]
        out.append(
            MetricResult(
                name,
                name,
                "binary",
                "higher",
                len(d.tasks),
                sum(d.a) / len(d.a),
                sum(d.b) / len(d.b),
                d.diff,
                d.low,
                d.high,
                "bootstrap over tasks" if len(d.tasks) > 1 else "none (one task)",
                d.p,
                counts={
                    "B higher": sum(x > 0 for x in diffs),
                    "B lower": sum(x < 0 for x in diffs),
                    "ties": sum(x == 0 for x in diffs),
                },
            )
        )
    return out


def _number(m: Metric, run: RunRecord) -> float:
    """A metric's value for a run, as a number; usable_metrics keeps only metrics every paired run has."""
    value = m.value(run)
    if value is None:
        raise ValueError(f"run {run.run_id} has no value for {m.label}; usable_metrics leaves such metrics out")
    return float(value)


def _test(m: Metric, pairs: list[Pair], level: float, resamples: int, seed: int) -> MetricResult:
    xa = [_number(m, p.a) for p in pairs]
    xb = [_number(m, p.b) for p in pairs]
    n = len(pairs)
    mean_a, mean_b = sum(xa) / n, sum(xb) / n
    if m.kind == "binary":
        res, only_a, only_b = paired_outcomes([bool(x) for x in xa], [bool(x) for x in xb], level)
        counts = {"only A": only_a, "only B": only_b, "both or neither": n - only_a - only_b}
    else:
        res = paired_amounts(xa, xb, level, resamples=resamples, seed=seed)
        diffs = [y - x for x, y in zip(xa, xb, strict=True)]
        counts = {
            "B higher": sum(d > 0 for d in diffs),
            "B lower": sum(d < 0 for d in diffs),
            "ties": sum(d == 0 for d in diffs),
        }
    return MetricResult(
        m.name,
        m.label,
        m.kind,
        m.better,
        n,
        mean_a,
        mean_b,
        res.diff,
        res.low,
        res.high,
        res.test,
        res.p,
        effect=res.effect,
        ratio=res.ratio,
        ratio_low=res.ratio_low,
        ratio_high=res.ratio_high,
        counts=counts,
    )


def verdict(results: list[MetricResult], pairs: int, alpha: float, level: float) -> Verdict:
    if pairs == 0:
        return Verdict(
            False, "No task appears in both batches, so nothing can be compared: pair runs by task id and seed.", [], []
        )
    found = [r for r in results if r.detectable]
    if not found:
        primary = next((r for r in results if r.primary), None)
        on_primary = f"the primary metric, {primary.label}, has {p_text(primary.p)}; " if primary else ""
        return Verdict(
            False,
            (
                f"No detectable difference between B and A on {pairs} paired tasks: {on_primary}no secondary metric "
                f"differs at the {alpha:g} level after a Holm correction over {len(results) - 1}. "
                "More tasks or repeated seeds would narrow the intervals"
            ),
            [],
            [],
        )
    return Verdict(
        True, f"B differs from A on {pairs} paired tasks", [describe(r, level) for r in found], [r.name for r in found]
    )
