"""One metric's result in a paired comparison (evals/ab/compare.py), and how it reads: amounts in the metric's
units, p-values, effect sizes, one line per finding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class MetricResult:
    name: str
    label: str
    kind: str
    better: str | None
    n: int
    mean_a: float
    mean_b: float
    diff: float  # B − A: mean difference over the pairs, or difference of rates
    ci_low: float
    ci_high: float
    test: str
    p: float
    primary: bool = False
    p_adjusted: float = 1.0  # the primary's own p; Holm among the secondaries for the rest
    effect: float = math.nan  # Cohen's d_z for amounts, on the scale tested
    ratio: float = math.nan  # geometric mean of B / A with its interval: amounts above zero in every run
    ratio_low: float = math.nan
    ratio_high: float = math.nan
    counts: dict[str, int] = field(default_factory=dict)  # B>A, B<A, ties; or only A, only B
    detectable: bool = False

    @property
    def relative(self) -> float:
        """B − A as a share of A's mean (nan when A's mean is zero or the metric is a rate)."""
        return self.diff / self.mean_a if self.kind != "binary" and self.mean_a else math.nan

    @property
    def direction(self) -> str:
        """'better', 'worse' or 'different' for B against A; '' when not detectable."""
        if not self.detectable:
            return ""
        if self.better is None:
            return "different"
        return "better" if (self.diff > 0) == (self.better == "higher") else "worse"


def amount(r: MetricResult, value: float, sign: bool = True) -> str:
    """A value of the metric as read: points for rates, dollars, seconds, whole tokens and steps."""
    if not math.isfinite(value):
        return "—"
    plus = "+" if sign else ""
    if r.kind == "binary":
        return f"{100 * value:{plus}.1f} pts"
    if r.kind == "usd":
        return f"{'-' if value < 0 else plus}${abs(value):.4g}"
    if r.kind == "seconds" or abs(value) < 100:
        return f"{value:{plus},.1f}"
    return f"{value:{plus},.0f}"


def interval_text(r: MetricResult, ratio: bool = False) -> str:
    """The interval of B − A (or, with `ratio`, of B / A) as read; where there is none, why: one pair has no spread
    to give one."""
    low, high = (r.ratio_low, r.ratio_high) if ratio else (r.ci_low, r.ci_high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return "n/a (one pair)" if r.n == 1 else "n/a"
    return f"×{low:.3g} to ×{high:.3g}" if ratio else f"{amount(r, low)} to {amount(r, high)}"


def p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def ratio_text(r: MetricResult, level: float | None = None) -> str:
    """B / A as a geometric mean ratio, with its interval when a level is given; '' where there is none."""
    if not math.isfinite(r.ratio):
        return ""
    text = f"B/A ×{r.ratio:.3g}"
    if level is not None and math.isfinite(r.ratio_low) and math.isfinite(r.ratio_high):
        text += f", {level:.0%} CI ×{r.ratio_low:.3g} to ×{r.ratio_high:.3g}"
    return text


def dz_text(r: MetricResult) -> str:
    """Cohen's d_z, the standardised effect of an amount; '' for outcomes."""
    if r.kind == "binary" or math.isnan(r.effect):
        return ""
    return "d_z = " + (f"{r.effect:+.2f}" if math.isfinite(r.effect) else ("+∞" if r.effect > 0 else "-∞"))


def effect_text(r: MetricResult, level: float | None = None) -> list[str]:
    """The effect beyond the raw difference: B / A (or the share of A's mean), and Cohen's d_z."""
    size = ratio_text(r, level) or (f"{r.relative:+.0%} of A" if math.isfinite(r.relative) else "")
    return [part for part in (size, dz_text(r)) if part]


def describe(r: MetricResult, level: float = 0.95) -> str:
    """One finding: the metric, by how much B differs from A, the interval of what was tested, and the test."""
    adjusted = "" if r.primary else f", Holm-adjusted {p_text(r.p_adjusted)}"
    reading = f" — {r.direction} for B" if r.better else ""
    if math.isfinite(r.ratio):  # tested as a ratio: its interval is the one that goes with the test
        size = f"{amount(r, r.diff)} per task ({ratio_text(r, level)})"
    else:
        relative = f", {r.relative:+.0%} of A" if math.isfinite(r.relative) else ""
        size = (
            f"{amount(r, r.diff)}{' per task' if r.kind != 'binary' else ''} ({level:.0%} CI {interval_text(r)}"
            f"{relative})"
        )
    return f"{r.label}{' (primary)' if r.primary else ''} {size}, {r.test} {p_text(r.p)}{adjusted}{reading}"
