"""A scatter of summary points with error bars over faint individual observations, each point labelled
where its label overlaps no other."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from evals.reports.svg import (
    CHAR_W,
    Fmt,
    Frame,
    axes,
    compact,
    escape,
    left_room,
    nice_ticks,
    no_data,
    whole_numbers,
    wrap_svg,
)


@dataclass
class Point:
    name: str
    x: float
    y: float
    color: str
    x_err: tuple[float, float] | None = None  # (low, high)
    y_err: tuple[float, float] | None = None
    note: str = ""


@dataclass
class Cloud:
    """Faint individual observations behind the summary points."""

    color: str
    points: list[tuple[float, float]] = field(default_factory=list)


def scatter(
    points: Sequence[Point],
    title: str,
    x_label: str,
    y_label: str,
    *,
    clouds: Sequence[Cloud] = (),
    x_fmt: Fmt = compact,
    y_fmt: Fmt = compact,
    y_range: tuple[float, float] | None = None,
) -> str:
    points = [replace(p, x_err=_drawn(p.x_err), y_err=_drawn(p.y_err)) for p in points]
    xs = [v for p in points for v in (p.x, *(p.x_err or ()))] + [x for c in clouds for x, _ in c.points]
    ys = [v for p in points for v in (p.y, *(p.y_err or ()))] + [y for c in clouds for _, y in c.points]
    if not xs:
        return no_data(title)
    whole = whole_numbers([p.x for p in points if not p.x_err] + [x for c in clouds for x, _ in c.points])
    x_ticks = nice_ticks(
        min(0.0, min(xs)), max(max(xs) * 1.1, 1e-9), integer=whole
    )  # room for labels right of the points
    y_ticks = nice_ticks(*(y_range or (min(0.0, min(ys)), max(max(ys), 1e-9))))
    f = Frame(x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1], left=left_room(y_ticks, y_fmt))
    body = axes(f, x_ticks, y_ticks, x_fmt, y_fmt, x_label, y_label)
    for c in clouds:
        body.extend(
            f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="2.5" fill="{c.color}" fill-opacity="0.25"/>'
            for x, y in c.points
        )
    placed: list[Box] = []
    for p in points:
        cx, cy = f.x(p.x), f.y(p.y)
        body.append("<g>")
        if p.x_err:
            body.append(
                f'<line x1="{f.x(p.x_err[0]):.1f}" x2="{f.x(p.x_err[1]):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{p.color}" stroke-width="2"/>'
            )
        if p.y_err:
            body.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{f.y(p.y_err[0]):.1f}" y2="{f.y(p.y_err[1]):.1f}" stroke="{p.color}" stroke-width="2"/>'
            )
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{p.color}" stroke="#fff" stroke-width="1.5"/>')
        box = label_box(cx, cy, p.name, f, placed)
        placed.append(box)
        body.append(
            f'<text class="point-label" x="{box.x0 if box.anchor == "start" else box.x1:.1f}" y="{box.y1 - 3:.1f}" '
            f'text-anchor="{box.anchor}">{escape(p.name)}</text>'
        )
        body.append(
            f"<title>{escape(p.name)}: {escape(x_label)} {escape(x_fmt(p.x))}, {escape(y_label)} {escape(y_fmt(p.y))}"
            f"{escape(' — ' + p.note) if p.note else ''}</title></g>"
        )
    return wrap_svg(body, title)


def _drawn(err: tuple[float, float] | None) -> tuple[float, float] | None:
    """An error bar to draw, or None where its interval could not be had (nan: a batch of one has no spread)."""
    return err if err is not None and all(math.isfinite(v) for v in err) else None


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float
    anchor: str = "start"

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


def label_box(cx: float, cy: float, text: str, f: Frame, placed: Sequence[Box]) -> Box:
    """Where a point's label goes: beside the point (right, or left near the right edge), above or below it,
    and on past the labels already placed until it overlaps none of them."""
    w, h = CHAR_W["point-label"] * len(text), 14.0
    right = cx > 0.7 * f.width
    x0 = cx - 9 - w if right else cx + 9
    anchor = "end" if right else "start"
    for dy in (-8, 18, -24, 34, -40, 50, -56, 66):
        box = Box(x0, cy + dy - h, x0 + w, cy + dy, anchor)
        if not any(box.overlaps(b) for b in placed):
            return box
    return Box(x0, cy - 8 - h, x0 + w, cy - 8, anchor)
