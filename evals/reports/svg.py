"""Small inline-SVG charts: line/area charts with markers, stacked bars, and a scatter with error bars.

Reports must work offline with no external assets, so charts are drawn here as SVG text.
Hover text uses SVG <title> elements, which browsers show without any script.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape as _escape
from pathlib import Path

Fmt = Callable[[float], str]
_CONTROL = dict.fromkeys(c for c in range(32) if chr(c) not in "\t\n\r")


def escape(text: str) -> str:
    """HTML-escape, and drop control characters, which XML (and so SVG) does not allow."""
    return _escape(str(text).translate(_CONTROL))


W, H = 560, 250
PAD_L, PAD_R, PAD_T, PAD_B = 58, 16, 30, 40
MAX_HOVER_POINTS = 400  # beyond this, per-point hover targets cost more page than they help


def compact(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.1f}M".replace(".0M", "M")
    if a >= 1e3:
        return f"{v / 1e3:.1f}k".replace(".0k", "k")
    return f"{v:.0f}" if a >= 10 or v == int(v) else f"{v:.2g}"


def percent(v: float) -> str:
    return f"{v:.0%}"


def usd(v: float) -> str:
    return f"${v:.2f}" if abs(v) >= 1 else f"${v:.3g}" if v else "$0"


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) from at most lo to at least hi;
    `integer` ticks (steps, counts) are whole numbers: 1, 2 or 5 times a power of ten, at least 1."""
    if hi - lo <= 1e-9 * max(1.0, abs(lo), abs(hi)):  # a flat or degenerate range: give it some height
        hi = lo + max(1.0, abs(lo) * 0.1)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * mag for m in steps if m * mag >= raw)
    if integer:
        step = max(1, round(step))
    first, last = math.floor(lo / step), math.ceil(hi / step)
    while first * step > lo:  # float rounding must not leave data outside the axis
        first -= 1
    while last * step < hi:
        last += 1
    return [k * step for k in range(first, last + 1)]


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


@dataclass
class Frame:
    """Maps data to pixels for one chart."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int = W
    height: int = H
    top: int = PAD_T  # room above the plot: one row of legend, more when it wraps
    left: float = PAD_L  # room left of the plot: the y axis's title and its widest tick label

    def x(self, v: float) -> float:
        span = (self.x1 - self.x0) or 1
        return self.left + (v - self.x0) / span * (self.width - self.left - PAD_R)

    def y(self, v: float) -> float:
        span = (self.y1 - self.y0) or 1
        return self.height - PAD_B - (v - self.y0) / span * (self.height - self.top - PAD_B)


def _axes(
    f: Frame, x_ticks: Sequence[float], y_ticks: Sequence[float], x_fmt: Fmt, y_fmt: Fmt, x_label: str, y_label: str
) -> list[str]:
    out = []
    for t in y_ticks:
        y = f.y(t)
        out.append(f'<line class="grid" x1="{f.left}" x2="{f.width - PAD_R}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{f.left - 6}" y="{y + 3.5:.1f}" text-anchor="end">{escape(y_fmt(t))}</text>')
    for t in x_ticks:
        x = f.x(t)
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{f.height - PAD_B + 15}" text-anchor="middle">{escape(x_fmt(t))}</text>'
        )
    base = f.height - PAD_B
    out.append(f'<line class="axis" x1="{f.left}" x2="{f.width - PAD_R}" y1="{base}" y2="{base}"/>')
    out.append(
        f'<text class="label" x="{(f.left + f.width - PAD_R) / 2:.0f}" y="{f.height - 6}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text class="label" transform="translate(12 {(f.top + base) / 2:.0f}) rotate(-90)" text-anchor="middle">{escape(y_label)}</text>'
    )
    return out


LEGEND_ROW = 16
CHAR_W = {"legend": 6.4, "point-label": 7.6, "tick": 6.0}  # generous widths per character, by text class


def _legend_rows(items: Sequence[tuple[str, str]], width: int) -> list[list[tuple[float, str, str]]]:
    """Legend entries placed left to right, wrapping onto a new row before the right edge."""
    rows: list[list[tuple[float, str, str]]] = [[]]
    x: float = PAD_L
    for name, color in items:
        w = 24 + CHAR_W["legend"] * len(name)
        if rows[-1] and x + w > width - PAD_R:
            rows.append([])
            x = PAD_L
        rows[-1].append((x, name, color))
        x += w
    return rows


def _left(y_ticks: Sequence[float], y_fmt: Fmt) -> float:
    """Room for the rotated y-axis title (about 20 px) and, right of it, the widest y tick label."""
    return max(PAD_L, 26 + CHAR_W["tick"] * max(len(y_fmt(t)) for t in y_ticks))


def _legend_top(items: Sequence[tuple[str, str]], width: int) -> int:
    return PAD_T + LEGEND_ROW * (len(_legend_rows(items, width)) - 1)


def _legend(items: Sequence[tuple[str, str]], width: int) -> list[str]:
    out = []
    for i, row in enumerate(_legend_rows(items, width)):
        for x, name, color in row:
            y = 9 + i * LEGEND_ROW
            out.append(f'<rect x="{x:.1f}" y="{y}" width="10" height="10" rx="2" fill="{color}"/>')
            out.append(f'<text class="legend" x="{x + 14:.1f}" y="{y + 9}">{escape(name)}</text>')
    return out


def _svg(body: list[str], title: str, width: int = W, height: int = H) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>"
    )


def standalone(svg: str) -> str:
    """A chart as a file of its own (for a README or a paper): the report's chart styles go inside it."""
    css = Path(__file__).with_name("templates") / "report.css"
    rules = [r for r in css.read_text(encoding="utf-8").splitlines() if r.startswith("svg.chart ")]
    rules.append("svg.chart text { font-family: system-ui, sans-serif; }")  # no page to inherit a font from
    head, body = svg.split(">", 1)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{head}><style>{" ".join(rules)}</style>{body}\n'


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
        return f'<p class="empty">No data for “{escape(title)}”.</p>'
    y_lo = min(ys) if y_min is None else min(y_min, min(ys))
    y_ticks = nice_ticks(y_lo, y_max if y_max is not None else max(max(ys), y_lo + 1e-9))
    x_ticks = nice_ticks(min(xs), max(max(xs), min(xs) + 1), 6, integer=_whole(xs))
    x_ticks = [t for t in x_ticks if min(xs) <= t <= max(xs)] or [min(xs)]
    legend = [(s.name, s.color) for s in series] + ([("compaction", markers[0].color)] if markers else [])
    top = _legend_top(legend, W)
    f = Frame(
        min(xs), max(max(xs), min(xs) + 1), y_ticks[0], y_ticks[-1], W, H + top - PAD_T, top, _left(y_ticks, y_fmt)
    )
    body = _axes(f, x_ticks, y_ticks, x_fmt, y_fmt, x_label, y_label)
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
    body.extend(_legend(legend, f.width))
    return _svg(body, title, f.width, f.height)


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
        return f'<p class="empty">No data for “{escape(title)}”.</p>'
    bins = _bins(len(xs), max_bars)
    bar_x = [sum(xs[i] for i in b) / len(b) for b in bins]
    stacks = {name: [sum(vals[i] for i in b) / len(b) for b in bins] for name, vals in parts.items()}
    totals = [sum(stacks[n][j] for n in stacks) for j in range(len(bins))]
    y_ticks = nice_ticks(0, max(max(totals), 1))
    lo, hi = min(bar_x), max(bar_x)
    legend = [(n, colors[n]) for n in stacks if any(stacks[n])]
    top = _legend_top(legend, width)
    f = Frame(
        lo - 0.5 * _gap(bar_x),
        hi + 0.5 * _gap(bar_x),
        0,
        y_ticks[-1],
        width,
        height + top - PAD_T,
        top,
        _left(y_ticks, y_fmt),
    )
    x_ticks = [t for t in nice_ticks(lo, max(hi, lo + 1), 6, integer=_whole(xs)) if lo <= t <= hi] or [lo]
    body = _axes(f, x_ticks, y_ticks, compact, y_fmt, x_label, y_label)
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
    body.extend(_legend(legend, f.width))
    return _svg(body, title, f.width, f.height)


def _whole(values: Sequence[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def _bins(n: int, max_bars: int) -> list[list[int]]:
    size = max(1, math.ceil(n / max_bars))
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def _gap(xs: Sequence[float]) -> float:
    return (max(xs) - min(xs)) / (len(xs) - 1) if len(xs) > 1 else 1.0


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
    xs = [v for p in points for v in (p.x, *(p.x_err or ()))] + [x for c in clouds for x, _ in c.points]
    ys = [v for p in points for v in (p.y, *(p.y_err or ()))] + [y for c in clouds for _, y in c.points]
    if not xs:
        return f'<p class="empty">No data for “{escape(title)}”.</p>'
    whole = _whole([p.x for p in points if not p.x_err] + [x for c in clouds for x, _ in c.points])
    x_ticks = nice_ticks(
        min(0.0, min(xs)), max(max(xs) * 1.1, 1e-9), integer=whole
    )  # room for labels right of the points
    y_ticks = nice_ticks(*(y_range or (min(0.0, min(ys)), max(max(ys), 1e-9))))
    f = Frame(x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1], left=_left(y_ticks, y_fmt))
    body = _axes(f, x_ticks, y_ticks, x_fmt, y_fmt, x_label, y_label)
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
    return _svg(body, title)


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
        return f'<p class="empty">No data for “{escape(title)}”.</p>'
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
    return _svg(body, title, width, height)
