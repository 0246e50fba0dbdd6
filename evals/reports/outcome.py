"""Whether a run succeeded, read the same way by reports and A/B tables.

Graders leave their verdict in two places: the stop event's outcome (a task check:
`goal_verified`; chess: `player_result` win/draw/loss) or a `grade.json` beside the run
(SWE: `{instance_id: {"resolved": ...}}`). A run of ours with neither counts as a success when it
submitted an answer or met its check. A run imported from another harness with neither has an unknown
outcome (None): that it submitted says nothing of whether it solved the task, until grades say so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.journal.summary import Summary

VERDICT_KEYS = ("resolved", "win", "goal_verified", "passed", "success")
GOOD_STOPS = ("submitted", "goal_verified")


def graded(run_dir: Path, summary: Summary) -> Summary:
    """The summary with a grade.json verdict folded into its outcome (the outcome's own keys win)."""
    path = Path(run_dir) / "grade.json"
    if not path.is_file():
        return summary
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return summary
    reports = [v for v in data.values() if isinstance(v, dict)] if isinstance(data, dict) else []
    report: dict[str, Any] = reports[0] if len(reports) == 1 else data if isinstance(data, dict) else {}
    if not isinstance(report.get("resolved"), bool):
        return summary
    return summary.model_copy(update={"outcome": {"resolved": report["resolved"], **(summary.outcome or {})}})


def success(summary: Summary, imported: bool = False) -> bool | None:
    """True or False; None for an imported run no grader judged (`imported`: run.json's `imported` is set)."""
    outcome = summary.outcome or {}
    for key in VERDICT_KEYS:
        if isinstance(outcome.get(key), bool):
            return outcome[key]
    if isinstance(outcome.get("player_result"), str):
        return outcome["player_result"] == "win"
    return None if imported else summary.stop_reason in GOOD_STOPS


def submitted(summary: Summary) -> bool:
    return summary.stop_reason == "submitted"


def outcome_label(summary: Summary, imported: bool = False) -> str:
    outcome = summary.outcome or {}
    for key in VERDICT_KEYS:
        if isinstance(outcome.get(key), bool):
            return key if outcome[key] else f"not {key}"
    if isinstance(outcome.get("player_result"), str):
        return outcome["player_result"]
    return f"unknown ({summary.stop_reason}, not graded)" if imported else summary.stop_reason


def rate_text(verdicts: list[bool | None]) -> tuple[str, str]:
    """A batch's success rate over the runs with a verdict, and what it counts ("3 of 4", "2 unknown")."""
    known = [v for v in verdicts if v is not None]
    unknown = len(verdicts) - len(known)
    if not known:
        return ("unknown" if verdicts else "—"), (f"{unknown} runs not graded" if unknown else "no runs")
    ok = sum(known)
    return f"{ok / len(known):.0%}", f"{ok} of {len(known)}" + (f"; {unknown} unknown (not graded)" if unknown else "")
