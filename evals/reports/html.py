"""Render the run report (report.html in the run directory) from a RunData.

One self-contained file: inline CSS, inline script, inline SVG charts; no network and no
external assets. Long texts are clipped and linked (see timeline.py), so the file stays small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from agent.journal.store import HARNESS_VERSION
from agent.models.pricing import format_usd
from evals.reports.breakdown import METHOD, PART_LABELS, breakdowns
from evals.reports.charts import PART_COLORS, run_charts
from evals.reports.chess import chess_view
from evals.reports.detectors import DETECTORS, DRIFT
from evals.reports.drift_summary import drift_line
from evals.reports.forks import fork_lines
from evals.reports.load import RunData
from evals.reports.localization import Ranked, of_run
from evals.reports.localization import cards as loc_cards
from evals.reports.memory import memory_lines
from evals.reports.recorded import Recorded, recorded_cost_text, repriced_text
from evals.reports.svg import compact
from evals.reports.timeline import Clipper, step_views
from evals.reports.totals import percent

TEMPLATES = Path(__file__).with_name("templates")
OPEN_ALL_UP_TO = 30  # shorter runs show every step open; longer ones only the flagged steps


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    sub: str = ""


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) else f"{v:,.2f}"
    env.filters["compact"] = compact
    env.filters["usd"] = format_usd
    return env


def common() -> dict:
    return {"version": HARNESS_VERSION, "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}


def cost_note(run: RunData) -> str:
    unpriced = sum(c is None for s, c in zip(run.steps, run.step_costs) if s.reply is not None)
    if run.price is not None and unpriced:
        note = (
            f"Cost unknown: the source recorded no usage for {unpriced} of the run's replies, so the price of "
            f"{run.price.provider}:{run.price.model} cannot be applied to them."
        )
    elif run.price is None:
        note = (
            f"Cost unknown: the price table has no entry for model {run.info.model!r}. "
            "Pass --prices FILE with its price, or --price-model NAME to price the run as another model."
        )
    else:
        p = run.price
        note = (
            f"Priced as {p.provider}:{p.model} at ${p.input:g} per million input and ${p.output:g} per million output "
            f"tokens; cache reads at {p.cached_input:g}x and cache writes at {p.cache_write:g}x the input price."
        )
    return note + (f" {source_note(run.recorded)}" if run.recorded else "")


def source_note(source: Recorded) -> str:
    return (
        f"Figures {source.label} are the source's own: the usage and cost its provider reported for each reply, "
        "and its own total. The harness's count of the prompts and the ideal prefix reuse are the harness's, from "
        "each prompt rebuilt from the journal."
    )


def cards(run: RunData) -> list[Card]:
    s, t = run.summary, run.summary.tokens
    errors = sum(s.errors.values())
    return [
        Card("steps", f"{s.steps:,}", f"{s.model_calls:,} model calls, {s.model_failures} failed"),
        Card("tool calls", f"{s.tool_calls_total:,}", ", ".join(f"{k} {v}" for k, v in s.tool_calls.items())[:60]),
        Card("errors", f"{errors:,}", ", ".join(f"{k} {v}" for k, v in s.errors.items())[:60] or "none"),
        *(_source_cards(run, run.recorded) if run.recorded else _own_cards(run)),
        Card("completion", compact(t.completion), f"{t.reasoning:,} of them reasoning"),
        Card("wall time", f"{s.wall_s:,.1f} s", f"{s.truncated_outputs} outputs truncated"),
        Card("findings", f"{len(run.findings):,}", f"in {len({f.step for f in run.findings}):,} steps"),
    ]


def _own_cards(run: RunData) -> list[Card]:
    s, t = run.summary, run.summary.tokens
    hit = f"{s.cache_hit_rate:.0%}" if s.cache_hit_rate is not None else "—"
    return [
        Card("prompt tokens", compact(t.prompt), f"{t.prompt:,} in total"),
        Card("cached", hit, f"{t.cached:,} tokens from cache" + _ideal(s)),
        Card("cost", format_usd(run.cost), run.price.model if run.price else "no price for this model"),
        Card(
            "cost at run time",
            format_usd(s.cost_usd),
            f"a lower bound: {s.unpriced_calls} calls unpriced"
            if s.unpriced_calls
            else "every call priced as journaled",
        ),
    ]


def _source_cards(run: RunData, source: Recorded) -> list[Card]:
    """An imported run: the source's recorded figures, each named as its, beside the harness's own."""
    s = run.summary
    recorded_cost, where = recorded_cost_text(source)
    return [
        Card(
            "prompt tokens",
            compact(source.prompt_tokens) if source.replies_with_usage else "—",
            f"{source.tokens_text}, {source.label}",
        ),
        Card(
            "cached share",
            percent(source.cached_share),
            f"{source.cached_tokens:,} tokens, the provider's, {source.label}"
            if source.replies_with_usage
            else "not recorded per reply",
        ),
        Card(
            "ideal prefix reuse",
            percent(s.prefix_reuse_rate),
            f"the harness's, of {run.counted_tokens:,} prompt tokens it counts",
        ),
        Card("cost", format_usd(run.cost), repriced_text(run.price, run.cost, run.info.model)),
        Card(f"cost {source.label}", recorded_cost, where),
    ]


def localization_cards(run: RunData, rankings: Mapping[str, Ranked] | None) -> list[Card]:
    loc = of_run(run, rankings)
    return [Card(*c) for c in loc_cards(loc)] if loc is not None else []


def _ideal(summary) -> str:
    rate = getattr(summary, "prefix_reuse_rate", None)  # newer summaries: the harness's ideal prefix reuse
    return f"; ideal {rate:.0%}" if isinstance(rate, float) else ""


def outcome_class(run: RunData) -> str:
    if run.summary.stop_reason == "unfinished":
        return "neutral"
    return {True: "ok", False: "bad", None: "neutral"}[run.verdict]


def render_run(run: RunData, out: Path | None = None, rankings: Mapping[str, Ranked] | None = None) -> Path:
    """Write report.html (at `out`, else in the run directory); clipped texts go beside it, under artifacts/report/,
    so a report written elsewhere leaves the run folder as it was. `rankings`: a SWE run's gold files and the
    code index's ranking (evals.reports.localization), for its localization cards."""
    path = Path(out) if out is not None else run.dir / "report.html"
    clip = Clipper(run.dir, path.parent)
    parts = breakdowns(run.opening, run.steps, run.info.policy)
    charts = {k: Markup(v) for k, v in run_charts(run, parts).items()}
    found = {d.name: [f for f in run.findings if f.detector == d.name] for d in DETECTORS}
    context = {
        **common(),
        "info": run.info,
        "summary": run.summary,
        "outcome": run.outcome,
        "outcome_class": outcome_class(run),
        "chess": chess_view(run.dir, run.summary.outcome, path.parent),
        "cards": cards(run) + localization_cards(run, rankings),
        "cost_note": cost_note(run),
        "journal_notes": run.journal_notes,
        "memory": memory_lines(run.memory) if run.memory is not None else [],
        "forks": fork_lines(run.forks) if run.forks is not None else [],
        "inherited_up_to": run.info.fork.at_step if run.info.fork is not None else 0,
        "warnings": list(getattr(run.summary, "warnings", None) or []),
        "findings": run.findings,
        "detectors": [(d, found[d.name]) for d in DETECTORS],
        "drift": DRIFT,
        "drift_line": drift_line(run),
        "charts": charts,
        "estimated": any(s.reply is not None and not s.usage.prompt_tokens for s in run.steps),
        "breakdown_method": METHOD,
        "opening": [_opening(m, i, clip) for i, m in enumerate(run.opening)],
        "steps": step_views(run.steps, run.findings, run.step_costs, parts, clip),
        "open_all": len(run.steps) <= OPEN_ALL_UP_TO,
        "part_labels": PART_LABELS,
        "part_colors": PART_COLORS,
    }
    path.write_text(environment().get_template("report.html.j2").render(context), encoding="utf-8")
    return path


@dataclass(frozen=True)
class _Opening:
    role: str
    text: str
    shown: str
    clipped: bool
    chars: int
    link: str | None


def _opening(message, i: int, clip: Clipper) -> _Opening:
    t = clip(message.text, f"opening-{i}-{message.role}")
    return _Opening(message.role, message.text, t.shown, t.clipped, t.chars, t.link)
