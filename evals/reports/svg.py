"""What every inline-SVG chart is drawn with: number formats, round ticks, the frame that maps data to
pixels, axes, a wrapping legend, and the <svg> element itself (or a file of its own).

Reports must work offline with no external assets, so charts are drawn as SVG text
(svg_lines.py, svg_bars.py, svg_scatter.py). Hover text uses SVG <title> elements,
which browsers show without any script.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape as _escape
from pathlib import Path

Fmt = Callable[[float], str]
_CONTROL = dict.fromkeys(c for c in range(32) if chr(c) not in "\t\n\r")


def escape(text: str) -> str:
    """HTML-escape, and drop control characters, which XML (and so SVG) does not allow."""
    return _escape(str(text).translate(_CONTROL))


W, H = 560, 250
PAD_L, PAD_R, PAD_T, PAD_B = 58, 16, 30, 40


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


def axes(
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


def left_room(y_ticks: Sequence[float], y_fmt: Fmt) -> float:
    """Room for the rotated y-axis title (about 20 px) and, right of it, the widest y tick label."""
    return max(PAD_L, 26 + CHAR_W["tick"] * max(len(y_fmt(t)) for t in y_ticks))


def legend_top(items: Sequence[tuple[str, str]], width: int) -> int:
    return PAD_T + LEGEND_ROW * (len(_legend_rows(items, width)) - 1)


def frame_under_legend(
    x0: float,
    x1: float,
    y_ticks: Sequence[float],
    y_fmt: Fmt,
    legend_items: Sequence[tuple[str, str]],
    width: int = W,
    height: int = H,
) -> Frame:
    """A chart's frame from x0 to x1 across and over `y_ticks` up, with room on top for its legend's rows
    (the plot keeps its height) and on the left for the y ticks."""
    top = legend_top(legend_items, width)
    return Frame(x0, x1, y_ticks[0], y_ticks[-1], width, height + top - PAD_T, top, left_room(y_ticks, y_fmt))


def ticks_within(lo: float, hi: float, integer: bool) -> list[float]:
    """About six round ticks for an x axis that spans just the data, lo to hi: those inside it (lo alone when
    none is); `integer`: whole numbers only."""
    return [t for t in nice_ticks(lo, max(hi, lo + 1), 6, integer=integer) if lo <= t <= hi] or [lo]


def legend(items: Sequence[tuple[str, str]], width: int) -> list[str]:
    out = []
    for i, row in enumerate(_legend_rows(items, width)):
        for x, name, color in row:
            y = 9 + i * LEGEND_ROW
            out.append(f'<rect x="{x:.1f}" y="{y}" width="10" height="10" rx="2" fill="{color}"/>')
            out.append(f'<text class="legend" x="{x + 14:.1f}" y="{y + 9}">{escape(name)}</text>')
    return out


def wrap_svg(body: list[str], title: str, width: int = W, height: int = H) -> str:
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


def whole_numbers(values: Sequence[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def no_data(title: str) -> str:
    return f'<p class="empty">No data for “{escape(title)}”.</p>'
