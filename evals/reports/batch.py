"""The batch report: a folder of run directories, aggregated, each run's own report linked."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from agent.models.pricing import format_usd
from evals.reports.chess import batch_rating
from evals.reports.detectors import DETECTORS, prompt_tokens
from evals.reports.drift_summary import drift_rows
from evals.reports.html import Card, common, environment, render_run
from evals.reports.load import RunData
from evals.reports.localization import Ranked, localization_view
from evals.reports.outcome import rate_text
from evals.reports.recorded import recorded_cost_text
from evals.reports.svg import compact, usd
from evals.reports.svg_bars import hbars
from evals.reports.svg_lines import Series, line_chart
from evals.reports.svg_scatter import Cloud, Point, scatter
from evals.reports.totals import SourceTotals, batch_cost, ideal_reuse, percent, run_cost, source_totals

PALETTE = ("#2563eb", "#16a34a", "#dc2626", "#7c3aed", "#0891b2", "#ea580c", "#db2777", "#4d7c0f", "#475569", "#b45309")
MAX_LINES = 12  # more runs than this: the prompt chart shows the median and the range instead of one line each


@dataclass(frozen=True)
class RunRow:
    run: RunData
    link: str
    outcome: str
    ok: bool | None  # None: an imported run no grader judged
    cost: str
    recorded_cost: str  # "" for a run of ours: the column shows only where some run was imported
    findings: int


def batch_cards(runs: list[RunData]) -> list[Card]:
    rate, counted = rate_text([r.verdict for r in runs])
    total, source = batch_cost(runs), source_totals(runs)
    prompt = sum(r.summary.tokens.prompt for r in runs)
    cached = sum(r.summary.tokens.cached for r in runs)
    steps = [r.summary.steps for r in runs]
    return [
        Card("runs", f"{len(runs)}", f"{len({r.summary.task_id for r in runs})} tasks"),
        Card("succeeded", rate, counted),
        Card("steps", f"{sum(steps) / len(steps):.1f}" if steps else "—", "mean per run"),
        Card("prompt tokens", compact(prompt), f"{prompt:,} in total" + (f", {_by(source, runs)}" if source else "")),
        Card(
            "cached",
            f"{cached / prompt:.0%}" if prompt else "—",
            f"{cached:,} tokens" + (", the provider's" if source else ""),
        ),
        Card("ideal prefix reuse", percent(ideal_reuse(runs)), "the harness's count of the prompts"),
        Card("cost", format_usd(total.usd), total.label),
        *([Card("recorded cost", format_usd(source.cost_usd), source.cost_note)] if source else []),
        Card("findings", f"{sum(len(r.findings) for r in runs):,}", f"in {sum(bool(r.findings) for r in runs)} runs"),
    ]


def _by(source: SourceTotals, runs: list[RunData]) -> str:
    """Who recorded a batch's token counts: its sources, for every run or for the imported ones."""
    return f"recorded by {source.by}" + ("" if source.runs == len(runs) else f" for {source.runs} runs")


def prompt_lines(runs: list[RunData]) -> str:
    if len(runs) <= MAX_LINES:
        series = [
            Series(r.summary.task_id, [(s.n, prompt_tokens(s)) for s in r.steps if s.reply], PALETTE[i % len(PALETTE)])
            for i, r in enumerate(runs)
        ]
    else:
        by_step: dict[int, list[int]] = {}
        for r in runs:
            for s in r.steps:
                if s.reply:
                    by_step.setdefault(s.n, []).append(prompt_tokens(s))
        xs = sorted(by_step)
        series = [
            Series("max", [(x, max(by_step[x])) for x in xs], "#94a3b8", dashed=True),
            Series("median", [(x, sorted(by_step[x])[len(by_step[x]) // 2]) for x in xs], PALETTE[0], "area"),
            Series("min", [(x, min(by_step[x])) for x in xs], "#94a3b8", dashed=True),
        ]
    return line_chart(series, "Prompt tokens per step", "step", "tokens")


def cost_title(runs: list[RunData]) -> str:
    return "Steps and cost per run" if all(run_cost(r) is not None for r in runs) else "Steps and prompt tokens per run"


def cost_scatter(runs: list[RunData]) -> str:
    """Each run's steps against its cost (its prompt tokens where some run has no cost known); a cost the source
    recorded stands in for an unpriced one, and the axis says so."""
    priced = all(run_cost(r) is not None for r in runs)
    clouds = {
        label: Cloud(color, [(r.summary.steps, _height(r, priced)) for r in runs if r.verdict is verdict])
        for label, color, verdict in (
            ("succeeded", "#16a34a", True),
            ("failed", "#dc2626", False),
            ("unknown", "#94a3b8", None),
        )
    }
    points = [
        Point(
            f"{label} ({len(c.points)})",
            sum(x for x, _ in c.points) / len(c.points),
            sum(y for _, y in c.points) / len(c.points),
            c.color,
        )
        for label, c in clouds.items()
        if c.points
    ]
    total = batch_cost(runs)
    return scatter(
        points,
        cost_title(runs),
        "steps",
        (
            "cost (USD, as recorded)"
            if not total.priced
            else "cost (USD, some as recorded)"
            if total.recorded
            else "cost (USD)"
        )
        if priced
        else "prompt tokens",
        clouds=[c for c in clouds.values() if c.points],
        y_fmt=usd if priced else compact,
    )


def _height(run: RunData, priced: bool) -> float:
    """A run's place on the scatter's y axis: its cost when every run has one, else its prompt tokens."""
    cost = run_cost(run)
    return cost if priced and cost is not None else run.summary.tokens.prompt


def render_batch(
    batch_dir: Path, runs: list[RunData], out: Path | None = None, rankings: Mapping[str, Ranked] | None = None
) -> Path:
    """Write the batch's report.html (at `out`, else in the batch folder) and each run's report: in its run
    directory, or, when the batch report goes elsewhere, in a folder of the run's name beside it. `rankings`:
    each SWE instance's gold files and the code index's ranking (evals.reports.localization)."""
    path = Path(out) if out is not None else batch_dir / "report.html"
    elsewhere = path.parent.resolve() != Path(batch_dir).resolve()
    rows = []
    for r in runs:
        if elsewhere:
            (path.parent / r.dir.name).mkdir(exist_ok=True)
        report = render_run(r, path.parent / r.dir.name / "report.html" if elsewhere else None, rankings)
        rows.append(
            RunRow(
                r,
                Path(os.path.relpath(report, path.parent)).as_posix(),
                r.outcome,
                r.verdict,
                format_usd(r.cost),
                recorded_cost_text(r.recorded)[0] if r.recorded else "",
                len(r.findings),
            )
        )
    counts = Counter(f.detector for r in runs for f in r.findings)
    cards = batch_cards(runs)
    rated = batch_rating(batch_dir)
    if rated is not None:  # a rated chess batch: its Elo beside win_loss, and the score per opponent Elo
        cards = [
            Card("Elo", rated.line.split(" (")[0], rated.line.partition(" (")[2].rstrip(")") or "95% interval"),
            Card("win_loss", rated.win_loss, "((W − L)/N + 1)/2"),
            *([Card("cost per game", rated.cost_per_game)] if rated.cost_per_game else []),
            *cards,
        ]
    context = {
        **common(),
        "title": batch_dir.name,
        "path": str(batch_dir),
        "cards": cards,
        "rows": rows,
        "imported": any(r.recorded for r in runs),
        "journal_notes": [(row, note) for row in rows for note in row.run.journal_notes],
        "detectors": [
            (d, counts[d.name], sum(any(f.detector == d.name for f in r.findings) for r in runs)) for d in DETECTORS
        ],
        "drift": drift_rows([(r.findings, r.verdict) for r in runs]),
        "localization": localization_view(runs, rankings),
        "cost_title": cost_title(runs),
        "charts": {
            "prompt": Markup(prompt_lines(runs)),
            "cost": Markup(cost_scatter(runs)),
            "elo": Markup(
                hbars(
                    [label for label, _ in rated.per_opponent],
                    [v for _, v in rated.per_opponent],
                    "Score per opponent Elo (%)",
                    fmt=lambda v: f"{v:.0f}%",
                )
            )
            if rated is not None
            else None,
            "findings": Markup(
                hbars(
                    [d.title for d in DETECTORS],
                    [counts[d.name] for d in DETECTORS],
                    "Findings by detector",
                    color="#f59e0b",
                )
            ),
        },
    }
    path.write_text(environment().get_template("batch.html.j2").render(context), encoding="utf-8")
    return path
