"""Markdown summaries of a run or a batch, for terminals and for pasting into issues."""

from __future__ import annotations

from collections import Counter

from agent.pricing import format_total, format_usd
from evals.reports.detectors import DETECTORS
from evals.reports.load import RunData
from evals.reports.outcome import outcome_label, success
from evals.reports.steps import lost

MAX_FINDINGS = 30


def overflow_lines(run: RunData) -> list[str]:
    """The run's context overflows and what each recovery lost, when it had any."""
    recoveries = [(s.n, o) for s in run.steps for o in s.overflows]
    if not recoveries:
        return []
    dropped = run.summary.overflow_dropped_tokens
    return [
        f"- **context overflows** {len(recoveries)} recoveries, {dropped:,} tokens dropped:",
        *(f"  - step {n}: {lost(o)}" for n, o in recoveries),
    ]


def run_markdown(run: RunData) -> str:
    s, t = run.summary, run.summary.tokens
    hit = f"{s.cache_hit_rate:.0%}" if s.cache_hit_rate is not None else "—"
    lines = [
        f"# Run {s.run_id}",
        "",
        *(f"> **warning:** {note}" for note in run.journal_notes),
        *([""] if run.journal_notes else []),
        f"- **task** {s.task_id} · **model** {s.model} · **policy** {s.policy or '—'}",
        f"- **outcome** {outcome_label(s)} (stop: {s.stop_reason}) — {s.message}",
        f"- **steps** {s.steps} · **tool calls** {s.tool_calls_total} · **errors** {sum(s.errors.values())} · **wall** {s.wall_s:.1f} s",
        f"- **tokens** prompt {t.prompt:,} (cached {hit}) · completion {t.completion:,} · reasoning {t.reasoning:,}",
        f"- **cost** {format_usd(run.cost)}"
        + ("" if run.price else f" (no price for {run.info.model})")
        + f" · **at run time** {format_total(s.cost_usd, s.unpriced_calls)}",
        *overflow_lines(run),
        "",
        "## Findings",
        "",
    ]
    counts = Counter(f.detector for f in run.findings)
    lines += ["| detector | findings | steps |", "|---|---:|---|"]
    for d in DETECTORS:
        steps = sorted({f.step for f in run.findings if f.detector == d.name})
        shown = ", ".join(map(str, steps[:15])) + (" …" if len(steps) > 15 else "")
        lines.append(f"| {d.title} | {counts[d.name]} | {shown or '—'} |")
    if run.findings:
        lines += ["", "## Details", ""]
        lines += [f"- step {f.step} · **{f.detector}** · {f.detail}" for f in run.findings[:MAX_FINDINGS]]
        if len(run.findings) > MAX_FINDINGS:
            lines.append(f"- … and {len(run.findings) - MAX_FINDINGS} more (see report.html)")
    return "\n".join(lines) + "\n"


def batch_markdown(runs: list[RunData], title: str) -> str:
    ok = sum(success(r.summary) for r in runs)
    costs = [c for c in (r.cost for r in runs) if c is not None]
    total = sum(costs) if len(costs) == len(runs) else None
    lines = [
        f"# Batch {title}",
        "",
        f"- **runs** {len(runs)} · **succeeded** {ok} ({ok / len(runs):.0%})" if runs else "- no runs",
        f"- **cost** {format_usd(total)}" + (" (some models have no price)" if total is None and runs else ""),
        "",
        *(f"> **warning:** {r.summary.run_id}: {note}" for r in runs for note in r.journal_notes),
        *([""] if any(r.journal_notes for r in runs) else []),
        "| run | task | outcome | steps | prompt tokens | cached | cost | findings |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        s = r.summary
        hit = f"{s.cache_hit_rate:.0%}" if s.cache_hit_rate is not None else "—"
        lines.append(
            f"| {s.run_id} | {s.task_id} | {outcome_label(s)} | {s.steps} | {s.tokens.prompt:,} | {hit} | "
            f"{format_usd(r.cost)} | {len(r.findings)} |"
        )
    counts = Counter(f.detector for r in runs for f in r.findings)
    lines += ["", "| detector | findings | runs |", "|---|---:|---:|"]
    for d in DETECTORS:
        hit_runs = sum(any(f.detector == d.name for f in r.findings) for r in runs)
        lines.append(f"| {d.title} | {counts[d.name]} | {hit_runs} |")
    return "\n".join(lines) + "\n"
