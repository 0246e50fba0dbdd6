"""summary.json: the numbers a user cares about, derived from the journal alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from agent.journal.fold import fold
from agent.journal.store import RunInfo
from agent.models.pricing import total
from core.events import Event, RunStopped
from core.types import Usage


class Tokens(BaseModel):
    prompt: int = 0  # includes cached
    completion: int = 0
    cached: int = 0
    cache_write: int = 0
    reasoning: int = 0


class Summary(BaseModel):
    run_id: str
    task_id: str
    model: str
    policy: str
    stop_reason: str
    message: str
    outcome: dict[str, Any]
    steps: int
    tokens: Tokens
    cache_hit_rate: float | None  # cached / prompt tokens, as the provider reported them
    prefix_reuse_rate: (
        float | None
    )  # ideal: tokens each prompt shares with an earlier one / all, by the harness's count
    wall_s: float
    model_calls: int
    model_failures: int
    tool_calls: dict[str, int]
    tool_calls_total: int
    errors: dict[str, int]  # observation error kinds
    truncated_outputs: int
    compactions: int  # folds that produced a working memory
    summariser_tokens: Tokens  # spent on compaction (an overflow recovery's included), not in `tokens`
    # Replies of the run's model to MCP servers' sampling requests, and their tokens (not in `tokens`); their
    # cost is in `cost_usd`.
    sampling_calls: int = 0
    sampling_tokens: Tokens = Tokens()
    warnings: list[str]  # e.g. a summariser cut off by its token cap, a compaction that failed
    # USD over every model call (failed attempts and summaries included) at the price in run.json; None when no
    # call could be priced. `unpriced_calls` above 0 makes it a lower bound: those calls' cost is unknown.
    cost_usd: float | None = None
    unpriced_calls: int = 0
    # Prompts too long for the model's window, and what their recoveries dropped (agent.overflow).
    overflow_recoveries: int = 0
    overflow_dropped_tokens: int = 0


def summarize(events: Iterable[Event], info: RunInfo, wall_s: float) -> Summary:
    run = fold(events)
    usage = summariser = sampled = Usage()
    tools: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    stop = run.stop or RunStopped(
        reason="unfinished", message="The run has no stop event (still running, or it crashed)."
    )
    failures = truncated = counted = reused = folds = overflows = dropped = samplings = 0
    warnings: list[str] = []
    for step in run.steps:
        usage = usage + step.usage
        counted += step.counted_tokens or 0
        reused += step.prefix_reused or 0
        failures += len(step.failures)
        samplings += len(step.samplings)
        sampled = sampled + step.sampling_usage
        for o in step.observations:
            tools[o.tool] += 1
            if o.error_kind:
                errors[o.error_kind] += 1
            truncated += o.truncation is not None
        for c in step.compactions:
            folds += c.ok
            summariser = summariser + c.summariser_usage
            if c.cut_off or not c.ok:
                warnings.append(f"step {c.step}: {c.message}")
        for recovery in step.overflows:
            overflows += 1
            dropped += recovery.dropped_tokens
            summariser = summariser + recovery.summariser_usage
    # A step is one the model answered (stop.max_steps counts replies): one cut short or failed is none.
    steps = model_calls = len(run.replies)
    cost, unpriced = total(call.cost_usd for step in run.steps for call in step.model_calls)
    return Summary(
        run_id=info.run_id,
        task_id=str(info.task.get("id", "task")),
        model=info.model,
        policy=str(info.policy.get("name", "")),
        stop_reason=stop.reason,
        message=stop.message,
        outcome=stop.outcome,
        steps=steps,
        tokens=Tokens(
            prompt=usage.prompt_tokens,
            completion=usage.completion_tokens,
            cached=usage.cached_tokens,
            cache_write=usage.cache_write_tokens,
            reasoning=usage.reasoning_tokens,
        ),
        cache_hit_rate=round(usage.cached_tokens / usage.prompt_tokens, 4) if usage.prompt_tokens else None,
        wall_s=round(wall_s, 3),
        model_calls=model_calls,
        model_failures=failures,
        tool_calls=dict(sorted(tools.items())),
        tool_calls_total=sum(tools.values()),
        errors=dict(sorted(errors.items())),
        truncated_outputs=truncated,
        prefix_reuse_rate=round(reused / counted, 4) if counted else None,
        compactions=folds,
        summariser_tokens=_tokens(summariser),
        sampling_calls=samplings,
        sampling_tokens=_tokens(sampled),
        cost_usd=round(cost, 6) if cost is not None else None,
        unpriced_calls=unpriced,
        overflow_recoveries=overflows,
        overflow_dropped_tokens=dropped,
        warnings=warnings,
    )


def _tokens(u: Usage) -> Tokens:
    return Tokens(
        prompt=u.prompt_tokens,
        completion=u.completion_tokens,
        cached=u.cached_tokens,
        cache_write=u.cache_write_tokens,
        reasoning=u.reasoning_tokens,
    )
