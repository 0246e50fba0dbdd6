"""`harness rerender RUN_DIR --policy OTHER`: the cost of a recorded trajectory under another context policy."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from pydantic import TypeAdapter
from rich.console import Console
from rich.table import Column, Table

from agent.journal.integrity import check_run
from agent.journal.store import read_run_info
from agent.recorded.rerender import HELD_FIXED, Rerendered, rerender
from agent.session import recorded_tools
from agent.tokens import counter_for
from cli.output import console, exits_on_error, text, warn
from core.context_policy import ContextStep
from core.policy import HarnessPolicy
from tools.base import recorded_tool
from tools.builtin import STANDARD

STEPS = TypeAdapter(list[ContextStep])


def report(
    run_dir: Path, other: HarnessPolicy, console: Console, per_step: bool = False, window: int | None = None
) -> dict[str, Rerendered]:
    """`window`: the context window the other policy's budgets ("80%") are shares of; default: the other
    policy's `model.context_window`, else the one the run recorded."""
    start = time.perf_counter()
    info = read_run_info(run_dir)
    window = window or other.model.context_window or info.context_window
    check = check_run(run_dir, info)
    for note in check.notes:
        warn(str(run_dir), note)
    events = check.events
    counter = counter_for(info.model)
    recorded = STEPS.validate_python(info.policy.get("context", []))
    records = recorded_tools(run_dir)
    tools = [recorded_tool(r) for r in records] if records is not None else list(STANDARD)
    results = {
        f"{info.policy.get('name', 'recorded')} (recorded)": rerender(
            events, recorded, counter, tools, recorded_folds=True, window=info.context_window
        ),
        other.name: rerender(events, other.context, counter, tools, window=window),
    }
    console.print(HELD_FIXED)
    where = (
        f"the {len(tools)} tools the run offered"
        if records is not None
        else "the standard tool set (this run did not record its tools)"
    )
    console.print(text(f"Run {info.run_id}: tokens by {counter.name}; tool schemas of {where}."))
    table = Table(
        "policy",
        "steps",
        "prompt tokens",
        "peak context",
        "ideal prefix reuse",
        "compactions",
        "summariser tokens",
        "tool schema tokens per request",
    )
    for name, r in results.items():
        table.add_row(
            text(name),
            str(len(r.steps)),
            f"{r.total:,}",
            f"{r.peak:,}",
            _pct(r.reuse_rate),
            str(len(r.folds)),
            f"{r.summariser.prompt_tokens + r.summariser.completion_tokens:,}",
            f"{r.tools_tokens:,}",
        )
    console.print(table)
    if per_step:
        steps = Table("step", *[Column(text(f"{n}: tokens / reused")) for n in results])
        rows = zip(*[r.steps for r in results.values()])
        for row in rows:
            steps.add_row(str(row[0].step), *[f"{s.prompt_tokens:,} / {s.reused:,}" for s in row])
        console.print(steps)
    cut = sum(r.cut_offs for r in results.values())
    if cut:
        console.print(
            text(
                ("warning:", "yellow"),
                f" the summariser was cut off by its token cap {cut} time(s); compaction retried.",
            )
        )
    console.print(f"re-rendered in {time.perf_counter() - start:.2f} s")
    return results


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


@exits_on_error
def rerender_command(
    run_dir: Path = typer.Argument(..., help="A run directory (it holds run.json and events.jsonl)."),
    policy: str = typer.Option(
        ..., help="The other context policy: a preset name (see `harness policies`) or a policy file."
    ),
    per_step: bool = typer.Option(False, "--per-step", help="Also print prompt tokens and reuse for every step."),
    context_window: int | None = typer.Option(
        None,
        min=1,
        help='The model\'s context window in tokens, for compaction budgets given as a share of it ("80%"). '
        "Default: the policy's [model] context_window, else the window the run recorded in run.json.",
    ),
) -> None:
    """Rebuild every step's prompt under another context policy from the journal alone (no model, no sandbox)
    and report prompt tokens, peak context and ideal prefix reuse. The model's replies are held fixed."""
    from core.policy import load_policy

    report(run_dir, load_policy(policy), console, per_step, context_window)
