"""Markdown summaries of a run or a batch, for terminals and for pasting into issues."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from agent.models.pricing import format_total, format_usd
from evals.reports.detectors import DETECTORS, DRIFT
from evals.reports.drift_summary import drift_line, drift_markdown, drift_rows
from evals.reports.finding import short
from evals.reports.forks import fork_lines
from evals.reports.load import RunData
from evals.reports.localization import Ranked, of_run
from evals.reports.localization import markdown as localization_markdown
from evals.reports.memory import batch_memory_lines, memory_lines
from evals.reports.outcome import rate_text
from evals.reports.recorded import Recorded, recorded_cost_text, repriced_text
from evals.reports.steps import lost
from evals.reports.totals import batch_cost, ideal_reuse, percent, source_totals

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


def program_lines(run: RunData) -> list[str]:
    """What the run's run_code programs called, and which of those calls failed, when it had any."""
    made = [(s.n, e) for s in run.steps for e in s.inner]
    if not made:
        return []
    programs = len({e.parent for _, e in made})
    tools = Counter(e.observation.tool for _, e in made)
    failed = [(n, e) for n, e in made if e.observation.status != "ok"]
    lines = [
        f"- **programs** {programs} run_code programs made {len(made)} tool calls "
        f"({', '.join(f'{t} ×{k}' for t, k in tools.most_common())}); {len(failed)} failed" + (":" if failed else "")
    ]
    lines += [
        f"  - step {n}, call {e.observation.call_id} ({e.observation.tool}): {short(e.observation.text)}"
        for n, e in failed[:MAX_FINDINGS]
    ]
    return lines


def own_lines(run: RunData) -> list[str]:
    s, t = run.summary, run.summary.tokens
    hit = f"{s.cache_hit_rate:.0%}" if s.cache_hit_rate is not None else "—"
    return [
        f"- **tokens** prompt {t.prompt:,} (cached {hit}) · completion {t.completion:,} · reasoning {t.reasoning:,}",
        f"- **cost** {format_usd(run.cost)}"
        + ("" if run.price else f" (no price for {run.info.model})")
        + f" · **at run time** {format_total(s.cost_usd, s.unpriced_calls)}",
    ]


def source_lines(run: RunData, source: Recorded) -> list[str]:
    """An imported run: the source's recorded figures, named as its, and beside them the harness's own."""
    s, t = run.summary, run.summary.tokens
    cost, where = recorded_cost_text(source)
    return [
        f"- **{source.label}** prompt tokens {source.tokens_text} · "
        + (
            f"provider's cached share {percent(source.cached_share)} ({source.cached_tokens:,} tokens) · completion {t.completion:,} · "
            f"reasoning {t.reasoning:,}"
            if source.replies_with_usage
            else "no usage per reply, so no cached share or completion tokens"
        ),
        f"- **the harness's** prompt tokens counted {run.counted_tokens:,} · ideal prefix reuse {percent(s.prefix_reuse_rate)}",
        f"- **cost** {format_usd(run.cost)} ({repriced_text(run.price, run.cost, run.info.model)}) · "
        f"**{source.label}** {cost} ({where})",
    ]


def run_markdown(run: RunData) -> str:
    s = run.summary
    lines = [
        f"# Run {s.run_id}",
        "",
        *(f"> **warning:** {note}" for note in run.journal_notes),
        *([""] if run.journal_notes else []),
        f"- **task** {s.task_id} · **model** {s.model} · **policy** {s.policy or '—'}",
        f"- **outcome** {run.outcome} (stop: {s.stop_reason}) — {s.message}",
        f"- **steps** {s.steps} · **tool calls** {s.tool_calls_total} · **errors** {sum(s.errors.values())} · **wall** {s.wall_s:.1f} s",
        *(source_lines(run, run.recorded) if run.recorded else own_lines(run)),
        *overflow_lines(run),
        *program_lines(run),
        *(memory_lines(run.memory) if run.memory is not None else []),
        *(fork_lines(run.forks) if run.forks is not None else []),
        "",
        "## Findings",
        "",
    ]
    counts = Counter(f.detector for f in run.findings)
    lines += [
        f"**Drift**: {drift_line(run)}",
        "",
        "| detector | findings | steps | tokens spent |",
        "|---|---:|---|---:|",
    ]
    for d in DETECTORS:
        found = [f for f in run.findings if f.detector == d.name]
        steps = sorted({f.step for f in found})
        shown = ", ".join(map(str, steps[:15])) + (" …" if len(steps) > 15 else "")
        spent = f"{sum(f.tokens for f in found):,}" if d.name in DRIFT else ""
        lines.append(f"| {d.title} | {counts[d.name]} | {shown or '—'} | {spent} |")
    if run.findings:
        lines += ["", "## Details", ""]
        lines += [f"- step {f.step} · **{f.detector}** · {f.detail}" for f in run.findings[:MAX_FINDINGS]]
        if len(run.findings) > MAX_FINDINGS:
            lines.append(f"- … and {len(run.findings) - MAX_FINDINGS} more (see report.html)")
    return "\n".join(lines) + "\n"


def batch_markdown(runs: list[RunData], title: str, rankings: Mapping[str, Ranked] | None = None) -> str:
    rate, counted = rate_text([r.verdict for r in runs])
    total, source = batch_cost(runs), source_totals(runs)
    lines = [
        f"# Batch {title}",
        "",
        f"- **runs** {len(runs)} · **succeeded** {rate} ({counted})" if runs else "- no runs",
        f"- **cost** {format_usd(total.usd)} ({total.label})",
        *(
            [
                f"- **recorded by {source.by}** cost {source.cost_text} · prompt tokens {source.prompt_tokens:,} · "
                f"provider's cached share {percent(source.cached_share)}"
            ]
            if source
            else []
        ),
        f"- **ideal prefix reuse** {percent(ideal_reuse(runs))} (the harness's count of the prompts)",
        "",
        *(f"> **warning:** {r.summary.run_id}: {note}" for r in runs for note in r.journal_notes),
        *([""] if any(r.journal_notes for r in runs) else []),
        "| run | task | outcome | steps | prompt tokens | cached | ideal reuse | cost |"
        + (" recorded cost |" if source else "")
        + " findings |",
        "|---|---|---|---:|---:|---:|---:|---:|" + ("---:|" if source else "") + "---:|",
    ]
    for r in runs:
        s = r.summary
        recorded_cell = f" {recorded_cost_text(r.recorded)[0] if r.recorded else '—'} |" if source else ""
        lines.append(
            f"| {s.run_id} | {s.task_id} | {r.outcome} | {s.steps} | {s.tokens.prompt:,} | "
            f"{percent(s.cache_hit_rate)} | {percent(s.prefix_reuse_rate)} | {format_usd(r.cost)} |{recorded_cell} "
            f"{len(r.findings)} |"
        )
    lines += batch_memory_lines(runs)
    counts = Counter(f.detector for r in runs for f in r.findings)
    lines += ["", "| detector | findings | runs |", "|---|---:|---:|"]
    for d in DETECTORS:
        hit_runs = sum(any(f.detector == d.name for f in r.findings) for r in runs)
        lines.append(f"| {d.title} | {counts[d.name]} | {hit_runs} |")
    lines += ["", "## Drift", "", *drift_markdown(drift_rows([(r.findings, r.verdict) for r in runs]))]
    lines += localization_markdown([loc for r in runs if (loc := of_run(r, rankings)) is not None])
    return "\n".join(lines) + "\n"
