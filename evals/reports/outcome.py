"""Whether a run succeeded, read from its summary the same way by reports and A/B tables.

Graders put their verdict in the stop event's outcome (SWE: `resolved`, chess: `win` or
`result`, a task check: `goal_verified`); a run without one counts as a success when it
submitted an answer or met its check.
"""

from __future__ import annotations

from agent.summary import Summary

VERDICT_KEYS = ("resolved", "win", "goal_verified", "passed", "success")
GOOD_STOPS = ("submitted", "goal_verified")


def success(summary: Summary) -> bool:
    outcome = summary.outcome or {}
    for key in VERDICT_KEYS:
        if isinstance(outcome.get(key), bool):
            return outcome[key]
    if isinstance(outcome.get("result"), str):
        return outcome["result"].lower() in ("win", "won")
    return summary.stop_reason in GOOD_STOPS


def submitted(summary: Summary) -> bool:
    return summary.stop_reason == "submitted"


def outcome_label(summary: Summary) -> str:
    outcome = summary.outcome or {}
    for key in VERDICT_KEYS:
        if isinstance(outcome.get(key), bool):
            return f"{key}" if outcome[key] else f"not {key}"
    if isinstance(outcome.get("result"), str):
        return str(outcome["result"])
    return summary.stop_reason
