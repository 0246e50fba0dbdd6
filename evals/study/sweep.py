"""The sweep's charts: hit rate and throughput per policy against cache size (or runs in flight),
with each point where another policy overtakes the first marked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evals.reports.svg import compact, percent
from evals.reports.svg_lines import Series, line_chart

COLORS = ("#64748b", "#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626")
CROSSOVER = "#b45309"


def crossovers(first: Sequence[tuple[float, float]], other: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Where the line through `other` crosses the line through `first` (both over the same x values, in order):
    the (x, y) of each crossing, by linear interpolation between the two x values around it."""
    out = []
    for (x0, a0), (x1, a1), (_, b0), (_, b1) in zip(first, first[1:], other, other[1:], strict=False):
        d0, d1 = b0 - a0, b1 - a1
        if d0 == 0 and d1 == 0:
            continue
        if d0 == 0:
            out.append((x0, a0))
        elif d0 * d1 < 0:
            t = d0 / (d0 - d1)
            out.append((x0 + t * (x1 - x0), a0 + t * (a1 - a0)))
    return out


def sweep_chart(
    lines: dict[str, list[tuple[float, float]]], title: str, x_label: str, y_label: str, y_fmt: Callable[[float], str]
) -> str:
    """One line per policy, in study order; a dot wherever a later policy crosses the first."""
    names = list(lines)
    series = [Series(name, sorted(points), COLORS[i % len(COLORS)]) for i, (name, points) in enumerate(lines.items())]
    first = sorted(lines[names[0]]) if names else []
    crossing = [
        c for name in names[1:] for c in crossovers(first, sorted(lines[name])) if len(first) == len(lines[name])
    ]
    if crossing:
        series.append(Series("crossover", crossing, CROSSOVER, kind="dots"))
    return line_chart(series, title, x_label, y_label, y_fmt=y_fmt)


def sweep_charts(points: list, policies: list[str]) -> list[tuple[str, str, str]]:
    """(caption, hit-rate chart, throughput chart) for each group of points that vary one setting:
    per number of runs in flight when cache sizes vary, else across runs in flight; apart for each
    replicas count and router."""
    sizes = sorted({p.kv_cache_mb or 0 for p in points})
    groups: dict[str, list] = {}
    for p in points:
        engines = f"{p.replicas} replicas {p.router}, " if p.router else ""
        groups.setdefault(engines + (f"{p.concurrency} in flight" if len(sizes) > 1 else "all points"), []).append(p)
    if len(sizes) > 1:
        x_of, x_label = (lambda p: p.cache_tokens or 0), "KV cache size (tokens)"
    else:
        x_of, x_label = (lambda p: p.concurrency), "runs in flight"
    out = []
    for caption, group in groups.items():
        if len(group) < 2:
            continue
        hit = {
            name: [(x_of(p), f.cached_share or 0.0) for p in group for f in p.policies if f.policy == name]
            for name in policies
        }
        speed = {
            name: [(x_of(p), f.tokens_per_s) for p in group for f in p.policies if f.policy == name]
            for name in policies
        }
        out.append(
            (
                caption,
                sweep_chart(hit, f"Cached share, {caption}", x_label, "cached share of prompt tokens", percent),
                sweep_chart(speed, f"Throughput, {caption}", x_label, "tokens per second", compact),
            )
        )
    return out
