"""The study's figures: one row per run from its journal, one summary per policy, and paired
comparisons between every two policies, or routers (the A/B statistics of evals.ab)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np

from agent.journal.store import read_events
from core.events import ModelReplied
from evals.ab.compare import compare
from evals.ab.html import to_json
from evals.ab.records import RunRecord
from evals.stats import paired_amounts, wilson
from evals.study.target import EngineCounters

PRIMARY = "prompt_tokens"  # what a context policy is for: the comparison's one uncorrected metric


@dataclass(frozen=True)
class RunRow:
    task_id: str
    seed: int | None
    policy: str
    run_dir: str  # relative to the study folder
    success: bool
    stop_reason: str
    steps: int
    prompt_tokens: int
    cached_tokens: int  # as the engine reported them, request by request
    completion_tokens: int
    counted_tokens: int  # the harness's own count of the prompts
    prefix_reused: int  # of those, the longest prefix each shares with an earlier request of the run
    peak_context: int  # the longest prompt, in the engine's tokens
    latencies_s: list[float]  # each request's time, as the client measured it
    ttfts_s: list[float]  # each request's time to first token, where the engine said (ModelReply.ttft_s)
    wall_s: float
    cost_usd: float | None = None  # at the run's price; None: unknown


def run_row(record: RunRecord, run_dir: Path, study_dir: Path, stop_reason: str) -> RunRow:
    replies = [e for e in read_events(run_dir) if isinstance(e, ModelReplied)]
    return RunRow(
        task_id=record.task_id,
        seed=record.seed,
        policy=record.policy,
        run_dir=str(run_dir.relative_to(study_dir)),
        success=bool(record.success),  # a study's runs are ours: never an ungraded import
        stop_reason=stop_reason,
        steps=record.steps,
        prompt_tokens=record.prompt_tokens,
        cached_tokens=record.cached_tokens,
        completion_tokens=record.completion_tokens,
        counted_tokens=sum(e.counted_tokens or 0 for e in replies),
        prefix_reused=sum(e.prefix_reused or 0 for e in replies),
        peak_context=max((e.reply.usage.prompt_tokens for e in replies), default=0),
        latencies_s=[round(e.reply.latency_s, 4) for e in replies],
        ttfts_s=[round(e.reply.ttft_s, 4) for e in replies if e.reply.ttft_s is not None],
        wall_s=record.wall_s,
        cost_usd=record.cost_usd,
    )


@dataclass(frozen=True)
class PolicyFigures:
    policy: str
    runs: int
    finished: int  # runs that reached their goal (a task's check, a won game)
    outcome_rate: float
    outcome_low: float  # Wilson's 95% interval
    outcome_high: float
    steps: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cached_share: float | None  # cached / prompt tokens, from the engine's per-request usage
    ideal_reuse: float | None  # the harness's best case beside it: prefix shared with an earlier request / counted
    engine: EngineCounters
    wall_s: float  # the policy's runs, first start to last stop
    steps_per_s: float
    tokens_per_s: float  # prompt + completion tokens
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    latency_p50_s: float | None
    latency_p95_s: float | None
    peak_context: int  # the longest prompt of any run
    mean_peak_context: float
    tokens_per_finished_task: float | None  # prompt + completion over all runs / runs that reached their goal
    load_imbalance: float | None = None  # several replicas: load_imbalance(engine.replica_prompt_tokens)


def load_imbalance(per_replica: dict[str, int] | None) -> float | None:
    """The busiest replica's prompt tokens (cached or not) over the mean replica's, over one policy's
    runs: 1.0 when every replica took as many, N when one of N took them all. None for one engine,
    or when no replica took any."""
    if not per_replica or len(per_replica) < 2:
        return None
    total = sum(per_replica.values())
    return max(per_replica.values()) * len(per_replica) / total if total > 0 else None


def quantile(values: list[float], q: float) -> float | None:
    return round(float(np.quantile(values, q)), 4) if values else None


def policy_figures(policy: str, rows: list[RunRow], engine: EngineCounters, wall_s: float) -> PolicyFigures:
    n, won = len(rows), sum(r.success for r in rows)
    prompt, cached = sum(r.prompt_tokens for r in rows), sum(r.cached_tokens for r in rows)
    completion, counted = sum(r.completion_tokens for r in rows), sum(r.counted_tokens for r in rows)
    steps = sum(r.steps for r in rows)
    low, high = wilson(won, n)
    ttfts = [t for r in rows for t in r.ttfts_s]
    latencies = [t for r in rows for t in r.latencies_s]
    return PolicyFigures(
        policy=policy,
        runs=n,
        finished=won,
        outcome_rate=won / n if n else math.nan,
        outcome_low=low,
        outcome_high=high,
        steps=steps,
        prompt_tokens=prompt,
        cached_tokens=cached,
        completion_tokens=completion,
        cached_share=cached / prompt if prompt else None,
        ideal_reuse=sum(r.prefix_reused for r in rows) / counted if counted else None,
        engine=engine,
        wall_s=round(wall_s, 3),
        steps_per_s=steps / wall_s if wall_s else math.nan,
        tokens_per_s=(prompt + completion) / wall_s if wall_s else math.nan,
        ttft_p50_s=quantile(ttfts, 0.5),
        ttft_p95_s=quantile(ttfts, 0.95),
        latency_p50_s=quantile(latencies, 0.5),
        latency_p95_s=quantile(latencies, 0.95),
        peak_context=max((r.peak_context for r in rows), default=0),
        mean_peak_context=sum(r.peak_context for r in rows) / n if n else math.nan,
        tokens_per_finished_task=(prompt + completion) / won if won else None,
        load_imbalance=load_imbalance(engine.replica_prompt_tokens),
    )


# What a pair says task by task (each paired over the task's seeds): label -> the run's value (None: unknown).
TASK_METRICS = {
    "model calls": lambda r: float(r.steps),
    "prompt tokens": lambda r: float(r.prompt_tokens),
    "cached share": lambda r: r.cached_tokens / r.prompt_tokens if r.prompt_tokens else 0.0,
    "ideal reuse": lambda r: r.prefix_reused / r.counted_tokens if r.counted_tokens else 0.0,
    "cost (USD)": lambda r: r.cost_usd,
}


def task_pairs(paired: list[tuple[RunRow, RunRow]], resamples: int) -> list[dict]:
    """Every task's runs under A and B, paired by seed: per metric, the means, B − A and its 95% interval."""
    out = []
    for task in sorted({a.task_id for a, _ in paired}):
        runs = [(a, b) for a, b in paired if a.task_id == task]
        for label, value in TASK_METRICS.items():
            xs, ys = [value(a) for a, _ in runs], [value(b) for _, b in runs]
            if any(v is None for v in (*xs, *ys)):
                out.append({"task": task, "label": label, "pairs": len(runs), "mean_a": None, "mean_b": None})
                continue
            res = paired_amounts(xs, ys, resamples=resamples)
            out.append(
                {
                    "task": task,
                    "label": label,
                    "pairs": len(runs),
                    "mean_a": float(np.mean(xs)),
                    "mean_b": float(np.mean(ys)),
                }
                | asdict(res)
            )
    return out


@dataclass
class PairFigures:
    """B against A, paired by task and seed: the A/B comparison, and the two study figures it lacks."""

    a: str
    b: str
    comparison: dict  # evals.ab's comparison, as ab.json writes it
    extra: list[dict] = field(default_factory=list)  # cached share and peak context, paired the same way
    tasks: list[dict] = field(default_factory=list)  # per task and metric (TASK_METRICS), paired over its seeds


def pair_figures(
    records: dict[str, list[RunRecord]], rows: dict[str, list[RunRow]], resamples: int
) -> list[PairFigures]:
    """Every two of the named sets of runs (policies at one point, or one policy's runs under each
    router), in the order given, B against A."""
    out = []
    for a, b in combinations(records, 2):
        c = compare(records[a], records[b], a, b, primary=PRIMARY, resamples=resamples)
        by_key = {(r.task_id, r.seed): r for r in rows[b]}
        paired = [(r, by_key[(r.task_id, r.seed)]) for r in rows[a] if (r.task_id, r.seed) in by_key]
        extra = []
        for name, value in (
            ("cached share", lambda r: r.cached_tokens / r.prompt_tokens if r.prompt_tokens else 0.0),
            ("peak context", lambda r: float(r.peak_context)),
        ):
            res = paired_amounts([value(x) for x, _ in paired], [value(y) for _, y in paired], resamples=resamples)
            extra.append({"label": name, "pairs": len(paired), **asdict(res)})
        out.append(PairFigures(a, b, to_json(c), extra, task_pairs(paired, resamples)))
    return out
