"""`harness rerender RUN_DIR|BATCH_DIR --policy P [--policy Q ...]`: what a recorded run (or every run of a
batch) would have sent and cost under other context policies, beside what it recorded."""

from __future__ import annotations

import math
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Column, Table

from agent.models.pricing import Price, format_usd
from agent.recorded.counterfactual import Counterfactual, counterfactual, to_json
from agent.recorded.engine_cache import cache_engine
from agent.recorded.rerender import HELD_FIXED
from cli.output import console, exits_on_error, print_json, stderr, text, warn
from cli.price_options import PRICE_MODEL, PRICE_TABLE, price_table
from cli.progress import following_files
from core.errors import HarnessError
from core.presets import load_policy
from evals.reports import counterfactuals
from evals.reports.counterfactuals import BatchCounterfactual, Spread, batch_counterfactual
from evals.reports.load import is_run_dir, run_dirs_in

PRICED_AS = (
    "Counterfactual cost: each rebuilt prompt as input, the part an ideal prefix cache serves (tokens shared with "
    "an earlier request of the run) at the cached-input price, the recorded completion tokens at the output price; "
    "a compacting policy's summariser calls likewise (their cached part: what they share with earlier requests)."
)


@exits_on_error
def rerender_command(
    path: Path = typer.Argument(
        ..., help="A run directory (it holds run.json and events.jsonl), or a batch folder of them."
    ),
    policy: list[str] = typer.Option(
        ...,
        help="Another context policy: a preset name (see `harness policies`) or a policy file; repeat the option "
        "for several.",
    ),
    per_step: bool = typer.Option(
        False, "--per-step", help="Also give every step's prompt tokens, ideal cached tokens and cost (one run)."
    ),
    context_window: int | None = typer.Option(
        None,
        min=1,
        help='The model\'s context window in tokens, for compaction budgets given as a share of it ("80%"). '
        "Default: the policy's [model] context_window, else the window the run recorded in run.json.",
    ),
    prices: Path = PRICE_TABLE,
    price_model: str = PRICE_MODEL,
    scale_to_recorded: bool = typer.Option(
        False,
        "--scale-to-recorded",
        help="Multiply every token count of ours by the run's fit scale (the prompt tokens its provider recorded "
        "per token the harness counts), so counts and costs are in the source model's tokens.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON on stdout (progress on stderr)."),
    engine: bool = typer.Option(
        False,
        "--engine",
        help="Also send every rebuilt request through the local engine's prefix cache (the default model's "
        "tokenizer and block size, random one-layer weights; a cold cache per run and policy) and report the "
        "share it served beside the ideal one. Slower: every prompt is prefilled.",
    ),
) -> None:
    """Rebuild every step's prompt under other context policies from the journal alone (no model, no sandbox)
    and report prompt tokens, peak context, ideal prefix reuse and what the prompts would have cost at the run's
    model's prices, beside the run's recorded tokens and cost. The model's replies are held fixed."""
    others = [load_policy(p) for p in policy]
    table = price_table(prices, price_model)
    if not path.is_dir():
        raise HarnessError(f"{path} is not a directory. Pass a run directory (with run.json) or a folder of them.")
    single = is_run_dir(path)
    dirs = [path] if single else run_dirs_in(path)
    if not dirs:
        raise HarnessError(f"{path} holds no run directories (folders with run.json and events.jsonl).")
    if per_step and not single:
        raise HarnessError("--per-step is for one run; a batch gets one row per policy over its runs.")
    measure = cache_engine() if engine else None  # loads the default model's tokenizer: after the checks
    if single:
        start = time.perf_counter()
        c = counterfactual(path, others, table, price_model, context_window, scale_to_recorded, engine=measure)
        for note in c.notes:
            warn(str(path), note)
        if as_json:
            print_json(to_json(c, per_step))
        else:
            show_run(c, console, per_step)
            console.print(f"re-rendered in {time.perf_counter() - start:.2f} s")
        return
    b = _batch(path, dirs, others, table, price_model, context_window, scale_to_recorded, measure)
    for note in b.notes:
        warn(note)
    if not b.runs:
        raise HarnessError(f"No run of {path} could be re-rendered: {len(b.skipped)} left out (named above).")
    if as_json:
        print_json(counterfactuals.to_json(b))
    else:
        show_batch(b, console, engine)
    if b.skipped:
        raise typer.Exit(1)


def _batch(path, dirs, others, table, price_model, window, scale, engine) -> BatchCounterfactual:
    """Progress and the runs left out go to stderr, as `import`'s do: stdout holds the result alone, and nothing
    when no run could be re-rendered."""
    with following_files(stderr, len(dirs), "re-rendering", "re-rendered", "runs", "left out") as done:
        return batch_counterfactual(path, dirs, others, table, price_model, window, scale, done, engine)


def price_line(price: Price | None, model: str) -> str:
    if price is None:
        return (
            f"No price for {model} in the price table: costs are unknown (pass --prices FILE, or --price-model M "
            "to price the run as another model)."
        )
    cached = price.input * price.cached_input
    return (
        f"Priced as {price.provider}:{price.model}: ${price.input:g} per million input tokens, ${cached:g} cached, "
        f"${price.output:g} output. {PRICED_AS}"
    )


def fit_line(c: Counterfactual) -> str:
    f = c.fit
    if f is None:
        return "Fit: no reply recorded its prompt tokens, so the rebuilt prompts cannot be compared with the source's."
    r2 = "-" if f.r2 is None else f"{f.r2:.4f}"
    line = (
        f"Fit of the recorded policy's rebuilt prompts to the prompt tokens the provider recorded, over {f.steps} "
        f"steps: scale {f.scale:.3f} (recorded tokens per token of ours), R² {r2}, mean absolute error after "
        f"scaling {f.mean_abs_rel_error:.1%}."
    )
    if c.scale is not None:
        line += f" Every count below is ours × {c.scale:.3f} (--scale-to-recorded): in the source's tokens."
    return line


def show_run(c: Counterfactual, console: Console, per_step: bool) -> None:
    console.print(HELD_FIXED)
    console.print(text(f"Run {c.run_id}: tokens by {c.tokenizer}; tool schemas of {c.tools}."))
    console.print(text(price_line(c.price, c.model)))
    console.print(text(fit_line(c)))
    table = Table(
        "policy",
        "steps",
        "prompt tokens",
        "peak context",
        "ideal cached share",
        "compactions",
        "summariser tokens",
        "tool schema tokens per request",
        "counterfactual cost",
        *(["engine cached share (all requests)"] if c.policies[0].engine else []),
    )
    for f in c.policies:
        table.add_row(
            text(f.policy),
            str(len(f.steps)),
            f"{f.prompt_tokens:,}",
            f"{f.peak_context:,}",
            _pct(f.ideal_cached_share),
            str(f.compactions),
            f"{f.summariser.prompt_tokens + f.summariser.completion_tokens:,}",
            f"{f.tool_schema_tokens:,}",
            format_usd(f.cost_usd),
            *([f"{_pct(f.engine.share)} ({_pct(f.engine.share_all)})"] if f.engine else []),
        )
    r = c.recorded
    table.add_row(
        "as recorded (the provider's counts and cache)",
        str(len(r.per_step)),
        f"{r.prompt_tokens:,}",
        f"{max(r.per_step.values(), default=0):,}",
        _pct(r.cached_tokens / r.prompt_tokens if r.prompt_tokens else None),
        "",
        "",
        "",
        format_usd(r.cost_usd) + (f" ({r.unpriced_calls} calls unpriced)" if r.unpriced_calls else ""),
        *([""] if c.policies[0].engine else []),
    )
    console.print(table)
    scaled = "; in the source's tokens" if c.scale is not None else ""
    for f in c.policies[1:]:
        console.print(
            text(
                f"Under {f.policy}, this run would have sent {f.prompt_tokens:,} prompt tokens (peak "
                f"{f.peak_context:,}{scaled}) and cost {format_usd(f.cost_usd)} with an ideal prefix cache; it recorded "
                f"{r.prompt_tokens:,} prompt tokens and {format_usd(r.cost_usd)}."
            )
        )
    if per_step:
        steps = Table(
            "step",
            "calls (a program's in brackets)",
            "recorded prompt tokens",
            *[Column(text(f"{f.policy}: tokens / cached / cost")) for f in c.policies],
        )
        for row in zip(*[f.steps for f in c.policies], strict=True):
            recorded = c.recorded.per_step.get(row[0].step, 0)
            steps.add_row(
                str(row[0].step),
                text(c.recorded.calls.get(row[0].step, "")),
                f"{recorded:,}",
                *[f"{s.prompt_tokens:,} / {s.reused:,} / {format_usd(s.cost_usd)}" for s in row],
            )
        console.print(steps)
    cut = sum(f.cut_offs for f in c.policies)
    if cut:
        console.print(
            text(
                ("warning:", "yellow"),
                f" the summariser was cut off by its token cap {cut} time(s); compaction retried.",
            )
        )


def show_batch(b: BatchCounterfactual, console: Console, engine: bool = False) -> None:
    console.print(HELD_FIXED)
    console.print(
        text(
            f"Batch {b.folder.name}: {len(b.runs)} runs"
            + (f" ({len(b.skipped)} left out)" if b.skipped else "")
            + ". Per run: the mean across runs [95% interval, Student's t]."
        )
    )
    console.print(text(PRICED_AS + " Each run at its own model's price."))
    if b.fit_scale is not None:
        line = (
            f"Fit of the recorded policy's rebuilt prompts to the recorded prompt tokens, over {b.fit_scale.runs} "
            f"runs: scale {_spread(b.fit_scale, '{:.3f}')}"
        )
        if b.fit_r2 is not None:
            line += f", R² {_spread(b.fit_r2, '{:.3f}')}"
        if b.fit_error is not None:
            line += f", mean absolute error after scaling {_spread(b.fit_error, '{:.1%}')}"
        console.print(text(line + "."))
    if b.scaled:
        console.print(text(f"Counts of {b.scaled} runs are scaled by their own fit (--scale-to-recorded)."))
    table = Table(
        "policy",
        "runs",
        "prompt tokens",
        "per run",
        "ideal cached share",
        "per run",
        "peak context per run",
        "max",
        "counterfactual cost",
        "per run",
        *(["engine cached share per run"] if engine else []),
    )
    for r in b.rows:
        table.add_row(
            text(r.policy),
            str(r.runs),
            f"{r.prompt_tokens_total:,}",
            _spread(r.prompt_tokens, "{:,.0f}"),
            _pct(r.ideal_cached_share),
            _spread(r.ideal_cached_share_per_run, "{:.1%}"),
            _spread(r.peak_context, "{:,.0f}"),
            f"{r.peak_context_max:,}",
            format_usd(r.cost_usd_total) + (f" ({r.priced_runs} priced)" if r.priced_runs < r.runs else ""),
            _spread(r.cost_usd, "${:,.4f}"),
            *([_spread(r.engine_cached_share, "{:.1%}")] if engine else []),
        )
    cached = b.recorded_cached_tokens / b.recorded_prompt_tokens if b.recorded_prompt_tokens else None
    runs_with_cost = b.recorded_cost.runs if b.recorded_cost else 0
    table.add_row(
        "as recorded (the provider's counts and cache)",
        str(len(b.runs)),
        f"{b.recorded_prompt_tokens:,}",
        "",
        _pct(cached),
        "",
        "",
        "",
        format_usd(b.recorded_cost_total) + (f" ({runs_with_cost} runs)" if runs_with_cost < len(b.runs) else ""),
        _spread(b.recorded_cost, "${:,.4f}"),
        *([""] if engine else []),
    )
    console.print(table)
    for r in b.rows[1:]:
        console.print(
            text(
                f"Under {r.policy}, the {r.runs} runs would have sent {r.prompt_tokens_total:,} prompt tokens and cost "
                f"{format_usd(r.cost_usd_total)} with an ideal prefix cache; they recorded {b.recorded_prompt_tokens:,} "
                f"prompt tokens and {format_usd(b.recorded_cost_total)}."
            )
        )


def _spread(s: Spread | None, fmt: str) -> str:
    if s is None:
        return "-"
    if math.isnan(s.low):
        return fmt.format(s.mean)
    return f"{fmt.format(s.mean)} [{fmt.format(s.low)}, {fmt.format(s.high)}]"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"
