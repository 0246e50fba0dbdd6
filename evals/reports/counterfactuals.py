"""A batch's counterfactual table: each policy's figures (agent/recorded/counterfactual.py) over every run of
a batch folder, as totals and as means across runs with 95% intervals (Student's t, evals/stats.py), beside
what the runs recorded.

Runs are read one at a time and only a few numbers of each are kept, so memory stays that of the largest run.
A run that cannot be read, or whose journal is not whole (a lost event, a torn tail), is named and left out;
so is a run with no model reply.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.models.pricing import PriceTable
from agent.recorded.counterfactual import Counterfactual, Figures, counterfactual
from agent.recorded.engine_cache import CacheEngine
from core.errors import HarnessError
from core.policy import HarnessPolicy
from evals.stats import mean_interval

MIXED_RECORDED = "recorded (each run's own policy)"


@dataclass(frozen=True)
class Spread:
    """A mean across runs and its 95% interval (nan bounds with fewer than two runs)."""

    mean: float
    low: float
    high: float
    runs: int


def spread(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    mean, low, high = mean_interval(values)
    return Spread(mean, low, high, len(values))


@dataclass
class Column:
    """One policy's per-run figures."""

    names: set[str] = field(default_factory=set)
    prompt_tokens: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)  # the runs with a price
    engine_shares: list[float] = field(default_factory=list)  # through the engine's prefix cache, when asked for

    def add(self, f: Figures) -> None:
        self.names.add(f.policy)
        self.prompt_tokens.append(f.prompt_tokens)
        self.reused.append(f.reused_tokens)
        self.peaks.append(f.peak_context)
        self.compactions.append(f.compactions)
        if f.cost_usd is not None:
            self.costs.append(f.cost_usd)
        if f.engine is not None and f.engine.share is not None:
            self.engine_shares.append(f.engine.share)


@dataclass(frozen=True)
class Row:
    policy: str
    recorded: bool
    runs: int
    prompt_tokens_total: int
    prompt_tokens: Spread | None
    ideal_cached_share: float | None  # over the batch: cached tokens / prompt tokens
    ideal_cached_share_per_run: Spread | None
    peak_context: Spread | None
    peak_context_max: int
    compactions: int
    cost_usd_total: float | None  # over the priced runs
    cost_usd: Spread | None
    priced_runs: int
    engine_cached_share: Spread | None  # per run, of the agent's requests


def row(column: Column, recorded: bool) -> Row:
    total = sum(column.prompt_tokens)
    shares = [r / p for r, p in zip(column.reused, column.prompt_tokens, strict=True) if p]
    return Row(
        policy=next(iter(column.names)) if len(column.names) == 1 else MIXED_RECORDED,
        recorded=recorded,
        runs=len(column.prompt_tokens),
        prompt_tokens_total=total,
        prompt_tokens=spread(column.prompt_tokens),
        ideal_cached_share=round(sum(column.reused) / total, 4) if total else None,
        ideal_cached_share_per_run=spread(shares),
        peak_context=spread(column.peaks),
        peak_context_max=max(column.peaks, default=0),
        compactions=sum(column.compactions),
        cost_usd_total=sum(column.costs) if column.costs else None,
        cost_usd=spread(column.costs),
        priced_runs=len(column.costs),
        engine_cached_share=spread(column.engine_shares),
    )


@dataclass
class BatchCounterfactual:
    folder: Path
    runs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per run left out: which, and why
    rows: list[Row] = field(default_factory=list)  # the recorded policy first
    fit_scale: Spread | None = None  # per run: the source's tokens per token of ours
    fit_r2: Spread | None = None
    fit_error: Spread | None = None  # mean absolute relative error after scaling
    scaled: int = 0  # runs whose counts were scaled to the recorded tokens
    recorded_prompt_tokens: int = 0
    recorded_cached_tokens: int = 0
    recorded_cost: Spread | None = None  # over the runs that recorded a cost
    recorded_cost_total: float | None = None
    notes: list[str] = field(default_factory=list)  # what the journal check found in the runs kept


def batch_counterfactual(
    folder: Path,
    dirs: Sequence[Path],
    others: Sequence[HarnessPolicy],
    prices: PriceTable,
    price_model: str | None = None,
    window: int | None = None,
    scale_to_recorded: bool = False,
    on_run: Callable[[Path, str | None], None] = lambda run_dir, error: None,
    engine: CacheEngine | None = None,
) -> BatchCounterfactual:
    """`on_run(run_dir, why it was left out or None)` after each run."""
    out = BatchCounterfactual(folder)
    columns = [Column() for _ in range(len(others) + 1)]
    scales: list[float] = []
    r2s: list[float] = []
    errors: list[float] = []
    costs: list[float] = []
    for run_dir in dirs:
        try:
            c = counterfactual(
                run_dir, others, prices, price_model, window, scale_to_recorded, whole_only=True, engine=engine
            )
            if not c.policies[0].steps:
                raise HarnessError(f"{run_dir}: the journal holds no model reply, so the run is left out.")
        except ValueError as e:  # artifacts/tools.json that is not a tool list
            _left_out(out, on_run, run_dir, f"{run_dir}: {str(e).splitlines()[0]}; the run is left out.")
            continue
        except HarnessError as e:
            _left_out(out, on_run, run_dir, str(e))
            continue
        _add(out, c, columns)
        if c.fit is not None:
            scales.append(c.fit.scale)
            errors.append(c.fit.mean_abs_rel_error)
            if c.fit.r2 is not None:
                r2s.append(c.fit.r2)
        if c.recorded.cost_usd is not None:
            costs.append(c.recorded.cost_usd)
        on_run(run_dir, None)
    out.rows = [row(col, recorded=i == 0) for i, col in enumerate(columns)] if out.runs else []
    out.fit_scale, out.fit_r2, out.fit_error = spread(scales), spread(r2s), spread(errors)
    out.recorded_cost, out.recorded_cost_total = spread(costs), (sum(costs) if costs else None)
    return out


def _add(out: BatchCounterfactual, c: Counterfactual, columns: list[Column]) -> None:
    out.runs.append(c.run_id)
    out.notes.extend(f"{c.run_id}: {note}" for note in c.notes)
    out.scaled += c.scale is not None
    out.recorded_prompt_tokens += c.recorded.prompt_tokens
    out.recorded_cached_tokens += c.recorded.cached_tokens
    for column, f in zip(columns, c.policies, strict=True):
        column.add(f)


def _left_out(out: BatchCounterfactual, on_run: Callable[[Path, str | None], None], run_dir: Path, why: str) -> None:
    out.skipped.append(why)
    on_run(run_dir, why)


def spread_json(s: Spread | None) -> dict | None:
    if s is None:
        return None
    return {k: None if math.isnan(v) else round(v, 6) for k, v in (("mean", s.mean), ("low", s.low), ("high", s.high))}


def to_json(b: BatchCounterfactual) -> dict:
    return {
        "batch": str(b.folder),
        "runs": len(b.runs),
        "skipped": b.skipped,
        "interval": "95%, Student's t across runs",
        "scaled_to_recorded_runs": b.scaled,
        "fit": {
            "runs": b.fit_scale.runs if b.fit_scale else 0,
            "scale": spread_json(b.fit_scale),
            "r2": spread_json(b.fit_r2),
            "mean_abs_rel_error": spread_json(b.fit_error),
        },
        "recorded": {
            "prompt_tokens": b.recorded_prompt_tokens,
            "cached_tokens": b.recorded_cached_tokens,
            "cost_usd_total": b.recorded_cost_total,
            "cost_usd": spread_json(b.recorded_cost),
        },
        "policies": [
            {
                "policy": r.policy,
                "recorded": r.recorded,
                "runs": r.runs,
                "prompt_tokens_total": r.prompt_tokens_total,
                "prompt_tokens": spread_json(r.prompt_tokens),
                "ideal_cached_share": r.ideal_cached_share,
                "ideal_cached_share_per_run": spread_json(r.ideal_cached_share_per_run),
                "peak_context": spread_json(r.peak_context),
                "peak_context_max": r.peak_context_max,
                "compactions": r.compactions,
                "cost_usd_total": r.cost_usd_total,
                "cost_usd": spread_json(r.cost_usd),
                "priced_runs": r.priced_runs,
                "engine_cached_share": spread_json(r.engine_cached_share),
            }
            for r in b.rows
        ],
        "notes": b.notes,
    }
