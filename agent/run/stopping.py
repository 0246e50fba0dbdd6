"""Stop rules. Each returns a Stop (reason and message) or None; the loop stops at the first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.models.pricing import format_total
from agent.run.state import Dispatched, RunState
from core.policy import HarnessPolicy
from sandboxes.base import Sandbox, SandboxDead

# Observations that may mean the sandbox itself is gone, so we probe it.
SUSPECT_KINDS = {"sandbox_dead", "tool_raised", "timeout"}


@dataclass(frozen=True)
class Stop:
    reason: str
    message: str
    outcome: dict[str, Any] = field(default_factory=dict)


# A rule the task brings along (a chess game's ending, say), checked after every step
# before the generic rules, because it knows best why its run is over.
StopRule = Callable[[RunState, Dispatched], Stop | None]


def after_step(
    state: RunState, done: Dispatched, policy: HarnessPolicy, sandbox: Sandbox, task_rules: Sequence[StopRule] = ()
) -> Stop | None:
    rules = policy.stop
    if any(o.error_kind in SUSPECT_KINDS for o in done.observations) and not _alive(sandbox):
        return Stop(
            "sandbox_dead",
            "The sandbox stopped responding (its container or process is gone); "
            "everything up to this step is in the journal.",
        )
    for rule in task_rules:
        if (stop := rule(state, done)) is not None:
            return stop
    if state.submission is not None:
        return Stop("submitted", "The agent submitted an answer.", {"answer": state.submission})
    if state.task.check is not None and done.observations and _check_passes(state.task.check, sandbox, policy):
        return Stop("goal_verified", f"The task's check `{state.task.check}` passed.", {"goal_verified": True})
    if state.failures_in_a_row >= policy.errors.max_consecutive_failures:
        return Stop(
            "too_many_failures",
            f"{state.failures_in_a_row} steps in a row failed; stopping (errors.max_consecutive_failures).",
        )
    if state.no_tool_replies_in_a_row >= rules.max_no_tool_replies:
        return Stop(
            "no_progress",
            f"{state.no_tool_replies_in_a_row} replies in a row had no tool call (stop.max_no_tool_replies).",
        )
    if state.repeats_in_a_row >= rules.max_repeats:
        return Stop(
            "no_progress",
            f"The same calls gave the same results {state.repeats_in_a_row} times in a row (stop.max_repeats).",
        )
    return budget_spent(state, policy)


def budget_spent(state: RunState, policy: HarnessPolicy) -> Stop | None:
    rules = policy.stop
    if state.step >= rules.max_steps:
        return Stop("step_budget", f"Reached the step budget of {rules.max_steps} (stop.max_steps).")
    tokens = state.usage.prompt_tokens + state.usage.completion_tokens
    if rules.max_tokens is not None and tokens >= rules.max_tokens:
        return Stop("token_budget", f"Used {tokens} tokens, over the budget of {rules.max_tokens} (stop.max_tokens).")
    if rules.max_cost_usd is not None and state.cost_usd >= rules.max_cost_usd:
        spent = format_total(state.cost_usd, state.unpriced_calls)
        return Stop("max_cost", f"Spent {spent}, over the budget of ${rules.max_cost_usd:g} (stop.max_cost_usd).")
    if rules.max_wall_s is not None and state.wall_s() >= rules.max_wall_s:
        return Stop(
            "wall_budget", f"Ran {state.wall_s():.0f} s, over the budget of {rules.max_wall_s:g} s (stop.max_wall_s)."
        )
    return None


OVERFLOW_ADVICE = (
    "Use a policy that compacts the context (e.g. --policy compact_cache_aware) or a model with a larger window; "
    "if the harness has the window wrong, set model.context_window."
)


def prompt_overflows(tokens: int, window: int | None, max_tokens: int) -> Stop | None:
    """A prompt that leaves no room for the reply's max_tokens in the model's window is not sent."""
    if window is None or tokens + max_tokens <= window:
        return None
    return Stop(
        "context_overflow",
        f"The next prompt has {tokens} tokens; with the {max_tokens} its reply may have (model.max_tokens) that is "
        f"over the model's context window of {window} tokens, so it was not sent. {OVERFLOW_ADVICE}",
        {"source": "counted", "tokens": tokens, "window": window},
    )


def _alive(sandbox: Sandbox) -> bool:
    try:
        return bool(sandbox.alive())
    except Exception:
        return False


def _check_passes(command: str, sandbox: Sandbox, policy: HarnessPolicy) -> bool:
    try:
        return sandbox.exec(command, timeout=policy.dispatch.tool_timeout_s).exit_code == 0
    except SandboxDead:
        return False


# A run that stopped for one of these can go on (`harness resume`); any other stop is the end of it.
RESUMABLE = ("awaiting_approval", "interrupted", "model_unavailable", "harness_error")
# Stops that mean the run could not do its work (the command line exits non-zero on them).
FAILED = ("model_error", "model_unavailable", "context_overflow", "context_exhausted", "sandbox_dead", "world_diverged")
