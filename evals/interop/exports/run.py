"""One run directory read for an export: what run.json recorded, the journal folded into steps, the run's
verdict (a SWE grade.json folded in) and the tools it offered. Every exporter reads a run through here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.journal.fold import Folded, fold
from agent.journal.integrity import check_run
from agent.journal.store import RunInfo, read_run_info
from agent.journal.summary import Summary
from agent.journal.tools import recorded_tools
from core.errors import HarnessError
from core.types import Observation, ToolCall
from evals.reports.load import is_run_dir, run_dirs_in
from evals.reports.outcome import VERDICT_KEYS, graded, success
from tools.base import ToolRecord


@dataclass
class Recorded:
    dir: Path
    info: RunInfo
    run: Folded
    summary: Summary  # with a grade.json verdict folded into its outcome
    tools: list[ToolRecord]  # as offered to the model; empty for runs recorded before tool sets were kept
    notes: list[str]  # what agent.journal.integrity found: a torn tail, a stale summary.json

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def task_prompt(self) -> str:
        user = next((m.text for m in self.run.opening if m.role == "user"), None)
        return user if user is not None else str(self.info.task.get("prompt", ""))

    @property
    def verdict(self) -> tuple[str, bool | None]:
        """The verdict's name (`resolved` for a graded SWE run, `win` for chess, `success` otherwise) and value:
        None for an imported run no grader judged."""
        outcome = self.summary.outcome or {}
        name = next((k for k in VERDICT_KEYS if isinstance(outcome.get(k), bool)), None)
        if name is None:
            name = "win" if isinstance(outcome.get("player_result"), str) else "success"
        return name, success(self.summary, bool(self.info.imported))

    @property
    def submission(self) -> str | None:
        answer = (self.summary.outcome or {}).get("answer")
        return answer if isinstance(answer, str) else None

    @property
    def finished(self) -> bool:
        return self.run.stop is not None

    @property
    def started(self) -> str:
        """When the run started, ISO: run.json's time, else its first event's (an import of a file that recorded no
        time has the import's)."""
        return self.info.started_at or iso(self.run.started_ts) or iso(self.run.worked_ts) or ""

    @property
    def agent(self) -> tuple[str, str]:
        """Who recorded the run, and its version: the harness, or the one an imported run came from."""
        imported = self.info.imported or {}
        if imported.get("agent"):
            return str(imported["agent"]), str(imported.get("agent_version") or "")
        return "harness", self.info.harness_version

    @property
    def timed(self) -> bool:
        """Whether its events carry the times things happened: an import of a file that recorded none carries the
        import's, which an export leaves out."""
        imported = self.info.imported or {}
        return imported.get("timestamps", True) is not False


def run_dirs(path: Path) -> list[Path]:
    """The run directories PATH names: itself, or those a batch folder holds."""
    path = Path(path)
    if is_run_dir(path):
        return [path]
    dirs = run_dirs_in(path) if path.is_dir() else []
    if not dirs:
        raise HarnessError(
            f"{path} is neither a run directory (with run.json and events.jsonl) nor a batch folder of them; "
            "pass a folder that `harness run`, `harness swe` or `harness chess` wrote."
        )
    return dirs


def read_run(run_dir: Path) -> Recorded:
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise HarnessError(f"{run_dir} is not a run directory: it needs run.json and events.jsonl.")
    try:
        info = read_run_info(run_dir)
    except ValidationError as e:
        raise HarnessError(f"{run_dir}/run.json is not a run record: {first_line(e)}.") from None
    check = check_run(run_dir, info)
    found = check.found
    if found.damage is not None:
        raise HarnessError(
            f"{run_dir}/events.jsonl is damaged: {found.damage.why}. The events after it cannot be trusted, so the "
            f"run is not exported (`harness resume {run_dir} --repair` cuts the journal at its last good event)."
        )
    if not found.events:
        raise HarnessError(
            f"{run_dir}/events.jsonl holds no event: the run never started, so there is nothing to export."
        )
    try:
        tools = recorded_tools(run_dir) or []
    except (ValueError, ValidationError) as e:
        raise HarnessError(f"{run_dir}/artifacts/tools.json is not a tool list: {first_line(e)}.") from None
    return Recorded(run_dir, info, fold(found.events), graded(run_dir, check.summary), tools, check.notes)


def first_line(e: Exception) -> str:
    return str(e).splitlines()[0].rstrip(".")


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat() if ts else None


def arguments(call: ToolCall) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as an object, and the raw string the model emitted when that object does not restate
    it (not JSON, not an object, or spaced otherwise than `json.dumps` writes it)."""
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {}, call.arguments
    if not isinstance(parsed, dict):
        return {}, call.arguments
    return parsed, None if json.dumps(parsed) == call.arguments else call.arguments


def observation_extra(o: Observation) -> dict[str, Any]:
    """What an observation carries that neither ATIF's results nor Inspect's tool messages have fields for,
    unknowns left out; `harness import` reads it back."""
    fields = {
        "tool": o.tool,
        "status": o.status,
        "error_kind": o.error_kind,
        "exit_code": o.exit_code,
        "duration_s": o.duration_s,
        "truncation": o.truncation.model_dump() if o.truncation is not None else None,
    }
    return {k: v for k, v in fields.items() if v is not None}


def tool_definitions(tools: list[ToolRecord]) -> list[dict[str, Any]]:
    """The tools offered, in OpenAI's function-calling shape (name, description, JSON schema parameters)."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in tools
    ]
