"""The run report's charts: prompt tokens per step, cumulative prompt tokens, cached share,
cumulative cost, and the per-turn prompt breakdown."""

from __future__ import annotations

from itertools import accumulate

from evals.reports.breakdown import PART_LABELS, PARTS, Breakdown
from evals.reports.detectors import prompt_tokens
from evals.reports.load import RunData
from evals.reports.steps import cut_off
from evals.reports.svg import compact, percent, usd
from evals.reports.svg_bars import stacked_bars
from evals.reports.svg_lines import Marker, Series, line_chart

BLUE, GREEN, TEAL, PURPLE = "#2563eb", "#16a34a", "#0891b2", "#7c3aed"
PART_COLORS = {
    "system": "#475569",
    "task": "#94a3b8",
    "replies": "#2563eb",
    "reasoning": "#a855f7",
    "observations": "#f59e0b",
    "summaries": "#10b981",
    "schemas": "#cbd5e1",
}


def compaction_markers(run: RunData) -> list[Marker]:
    return [
        Marker(
            s.n + 0.5,
            f"compaction after step {s.n}: {c.tokens_before or '?'} → {c.tokens_after or '?'} tokens"
            + (" (summary cut off)" if cut_off(c) else ""),
        )
        for s in run.steps
        for c in s.compactions
    ]


def ideal_reuse(steps: list) -> list[Series]:
    """The share of each prompt that repeated an earlier prompt's prefix, as the harness counted it:
    what a perfect prefix cache would have served. Shown when the journal records it."""
    known = [s for s in steps if s.prefix_reused is not None and s.counted_tokens]
    if not known:
        return []
    return [
        Series("ideal prefix reuse", [(s.n, s.prefix_reused / s.counted_tokens) for s in known], "#64748b", dashed=True)
    ]


def run_charts(run: RunData, parts: list[Breakdown]) -> dict[str, str]:
    steps = [s for s in run.steps if s.reply is not None]
    xs = [s.n for s in steps]
    prompts = [prompt_tokens(s) for s in steps]
    cached = [s.usage.cached_tokens for s in steps]
    estimated = any(not s.usage.prompt_tokens for s in steps)
    unit = "tokens (estimated)" if estimated else "tokens"
    markers = compaction_markers(run)
    charts = {
        "prompt": line_chart(
            [
                Series("prompt", list(zip(xs, prompts)), BLUE, "area"),
                Series("cached", list(zip(xs, cached)), GREEN, "area"),
            ],
            "Prompt tokens per step",
            "step",
            unit,
            markers=markers,
        ),
        "cumulative": line_chart(
            [
                Series("prompt, cumulative", list(zip(xs, accumulate(prompts))), TEAL, "area"),
                Series("cached, cumulative", list(zip(xs, accumulate(cached))), GREEN, "line", dashed=True),
            ],
            "Cumulative prompt tokens",
            "step",
            unit,
            markers=markers,
        ),
        "cached_share": line_chart(
            [
                Series(
                    "cached share",
                    [(s.n, s.usage.cached_tokens / p if p else 0.0) for s, p in zip(steps, prompts)],
                    GREEN,
                ),
                *ideal_reuse(steps),
            ],
            "Cached share of the prompt",
            "step",
            "share cached",
            markers=markers,
            y_fmt=percent,
            y_max=1.0,
        ),
    }
    if run.cost is not None:
        costs = [c or 0.0 for s, c in zip(run.steps, run.step_costs) if s.reply is not None]
        charts["cost"] = line_chart(
            [Series("cost", list(zip(xs, accumulate(costs))), PURPLE, "area")],
            "Cumulative cost",
            "step",
            "USD",
            markers=markers,
            y_fmt=usd,
        )
    present = [p for p in PARTS if any(b.tokens.get(p) for b in parts)]
    charts["breakdown"] = stacked_bars(
        [b.step for b in parts],
        {PART_LABELS[p]: [b.tokens.get(p, 0) for b in parts] for p in present},
        {PART_LABELS[p]: PART_COLORS[p] for p in present},
        "What each prompt was made of",
        "step",
        "tokens (estimated)",
        y_fmt=compact,
        width=1160,
        height=300,
    )
    return charts
