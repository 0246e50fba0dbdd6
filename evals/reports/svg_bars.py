"""Bar charts: stacked bars over steps (averaged into bins past a cap), and horizontal bars per category."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evals.reports.svg import (
    Fmt,
    H,
    W,
    axes,
    compact,
    escape,
    frame_under_legend,
    legend,
    nice_ticks,
    no_data,
    ticks_within,
    whole_numbers,
    wrap_svg,
)


def stacked_bars(
    xs: Sequence[float],
    parts: dict[str, Sequence[float]],
    colors: dict[str, str],
    title: str,
    x_label: str,
    y_label: str,
    *,
    y_fmt: Fmt = compact,
    max_bars: int = 200,
    width: int = W,
    height: int = H,
) -> str:
    """One bar per x, split into parts; more than `max_bars` bars are averaged into bins."""
    if not xs:
        return no_data(title)
    bins = _bins(len(xs), max_bars)
    bar_x = [sum(xs[i] for i in b) / len(b) for b in bins]
    stacks = {name: [sum(vals[i] for i in b) / len(b) for b in bins] for name, vals in parts.items()}
    totals = [sum(stacks[n][j] for n in stacks) for j in range(len(bins))]
    y_ticks = nice_ticks(0, max(max(totals), 1))
    lo, hi = min(bar_x), max(bar_x)
    entries = [(n, colors[n]) for n in stacks if any(stacks[n])]
    f = frame_under_legend(lo - 0.5 * _gap(bar_x), hi + 0.5 * _gap(bar_x), y_ticks, y_fmt, entries, width, height)
    x_ticks = ticks_within(lo, hi, whole_numbers(xs))
    body = axes(f, x_ticks, y_ticks, compact, y_fmt, x_label, y_label)
    bar_w = max(1.0, (f.x(lo + _gap(bar_x)) - f.x(lo)) * 0.8)
    for j, x in enumerate(bar_x):
        y_acc = 0.0
        label = f"step {xs[bins[j][0]]:g}" + (f"–{xs[bins[j][-1]]:g} (mean)" if len(bins[j]) > 1 else "")
        tip = escape(label + ": " + ", ".join(f"{n} {y_fmt(stacks[n][j])}" for n in stacks if stacks[n][j]))
        body.append(f"<g><title>{tip}</title>")
        for name in stacks:
            v = stacks[name][j]
            if v <= 0:
                continue
            bar_top, bar_bottom = f.y(y_acc + v), f.y(y_acc)
            body.append(
                f'<rect x="{f.x(x) - bar_w / 2:.1f}" y="{bar_top:.1f}" width="{bar_w:.1f}" height="{bar_bottom - bar_top:.1f}" fill="{colors[name]}"/>'
            )
            y_acc += v
        body.append("</g>")
    body.extend(legend(entries, f.width))
    return wrap_svg(body, title, f.width, f.height)


def _bins(n: int, max_bars: int) -> list[list[int]]:
    size = max(1, math.ceil(n / max_bars))
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def _gap(xs: Sequence[float]) -> float:
    return (max(xs) - min(xs)) / (len(xs) - 1) if len(xs) > 1 else 1.0


def hbars(
    labels: Sequence[str],
    values: Sequence[float],
    title: str,
    *,
    color: str = "#2563eb",
    fmt: Fmt = compact,
    width: int = W,
) -> str:
    """Horizontal bars with their labels on the left: counts per category."""
    if not labels:
        return no_data(title)
    row, label_w, top = 24, 210, 8
    height = top + row * len(labels) + 8
    top_value = max(max(values), 1)
    span = width - label_w - 60
    body = []
    for i, (label, v) in enumerate(zip(labels, values)):
        y = top + i * row
        w = span * v / top_value
        faint = ' fill-opacity="0.25"' if not v else ""
        body.append(f'<text class="legend" x="{label_w - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>')
        body.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{max(w, 0.5):.1f}" height="{row - 8}" rx="3" fill="{color}"'
            f"{faint}><title>{escape(label)}: {escape(fmt(v))}</title></rect>"
        )
        body.append(f'<text class="tick" x="{label_w + w + 6:.1f}" y="{y + 15}">{escape(fmt(v))}</text>')
    return wrap_svg(body, title, width, height)
