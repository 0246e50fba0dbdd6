"""Line and area charts over steps, with vertical markers (compactions) and a legend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evals.reports.svg import (
    PAD_B,
    Fmt,
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

MAX_HOVER_POINTS = 400  # beyond this, per-point hover targets cost more page than they help


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    color: str
    kind: str = "line"  # line | area | dots
    dashed: bool = False


@dataclass
class Marker:
    x: float
    label: str
    color: str = "#b45309"


def line_chart(
    series: Sequence[Series],
    title: str,
    x_label: str,
    y_label: str,
    *,
    markers: Sequence[Marker] = (),
    y_fmt: Fmt = compact,
    x_fmt: Fmt = compact,
    y_min: float | None = 0,
    y_max: float | None = None,
) -> str:
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    if not xs:
        return no_data(title)
    y_lo = min(ys) if y_min is None else min(y_min, min(ys))
    y_ticks = nice_ticks(y_lo, y_max if y_max is not None else max(max(ys), y_lo + 1e-9))
    x_ticks = ticks_within(min(xs), max(xs), whole_numbers(xs))
    entries = [(s.name, s.color) for s in series] + ([("compaction", markers[0].color)] if markers else [])
    f = frame_under_legend(min(xs), max(max(xs), min(xs) + 1), y_ticks, y_fmt, entries)
    body = axes(f, x_ticks, y_ticks, x_fmt, y_fmt, x_label, y_label)
    for m in markers:
        x = f.x(m.x)
        body.append(
            f'<g class="marker"><line x1="{x:.1f}" x2="{x:.1f}" y1="{f.top}" y2="{f.height - PAD_B}" stroke="{m.color}"/>'
            f"<title>{escape(m.label)}</title></g>"
        )
    for s in series:
        pts = " ".join(f"{f.x(x):.1f},{f.y(y):.1f}" for x, y in s.points)
        if s.kind == "area" and s.points:
            base = f.y(max(f.y0, 0))
            first, last = f.x(s.points[0][0]), f.x(s.points[-1][0])
            body.append(
                f'<polygon points="{first:.1f},{base:.1f} {pts} {last:.1f},{base:.1f}" fill="{s.color}" fill-opacity="0.18" stroke="none"/>'
            )
        if s.kind in ("line", "area"):
            dash = ' stroke-dasharray="5 4"' if s.dashed else ""
            body.append(f'<polyline points="{pts}" fill="none" stroke="{s.color}" stroke-width="1.8"{dash}/>')
        if s.kind == "dots" or len(s.points) <= MAX_HOVER_POINTS:
            r = 3 if s.kind == "dots" else 2.2
            body.extend(
                f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="{r}" fill="{s.color}"><title>{escape(s.name)} at {escape(x_fmt(x))}: '
                f"{escape(y_fmt(y))}</title></circle>"
                for x, y in s.points
            )
    body.extend(legend(entries, f.width))
    return wrap_svg(body, title, f.width, f.height)
