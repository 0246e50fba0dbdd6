"""Write an A/B comparison as ab.json (every figure) and ab.html (verdict, table, chart)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from markupsafe import Markup

from agent.journal.store import make_folder
from evals.ab.compare import Comparison
from evals.ab.results import MetricResult, amount, effect_text, interval_text, p_text
from evals.reports.html import common, environment
from evals.reports.svg import compact, percent, usd
from evals.reports.svg_scatter import Point, scatter

A_COLOR, B_COLOR = "#64748b", "#2563eb"


def to_json(c: Comparison) -> dict:
    data = asdict(c)
    for m, r in zip(data["metrics"], c.metrics, strict=True):
        m["direction"], m["relative"] = r.direction, r.relative
    data["verdict"]["text"] = c.verdict.text
    return _finite(data)


def _finite(value):
    """JSON has no NaN: an interval that could not be computed is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def chart(c: Comparison) -> str:
    if not c.pairs:
        return '<p class="empty">No paired tasks.</p>'
    is_usd = c.spend_label.startswith("cost")
    note = f"{c.level:.0%} intervals: Wilson for the rate, Student's t for the mean"
    points = [
        Point("A", c.spend_a[0], c.success_a[0], A_COLOR, c.spend_a[1:], c.success_a[1:], note=note),
        Point("B", c.spend_b[0], c.success_b[0], B_COLOR, c.spend_b[1:], c.success_b[1:], note=note),
    ]
    rate = "success rate" if any(m.name == "success" for m in c.metrics) else "submitted rate"  # ungraded imports
    return scatter(
        points,
        f"{rate.capitalize()} against mean {c.spend_label} per task",
        f"mean {c.spend_label} per task",
        rate,
        x_fmt=usd if is_usd else compact,
        y_fmt=percent,
        y_range=(0.0, 1.0),
    )


def cell(r: MetricResult, value: float) -> str:
    if r.kind == "binary":
        return f"{value:.0%}"
    return amount(r, value, sign=False)


def render(c: Comparison, out_dir: Path) -> tuple[Path, Path]:
    make_folder(out_dir, "comparison folder", exist_ok=True)
    json_path = out_dir / "ab.json"
    json_path.write_text(json.dumps(to_json(c), indent=2) + "\n")
    html_path = out_dir / "ab.html"
    context = {
        **common(),
        "c": c,
        "chart": Markup(chart(c)),
        "cell": cell,
        "amount": amount,
        "interval": interval_text,
        "effect": effect_text,
        "p_text": p_text,
    }
    html_path.write_text(environment().get_template("ab.html.j2").render(context), encoding="utf-8")
    return html_path, json_path
