"""The small common form every importer reads a trajectory into, and the writer turns into a run directory.

A trajectory is an opening (the system prompt and the task, as the source sent them) and then turns: one
model reply each, the results of its tool calls, and any message the source harness added before the next
reply (a format error, a nudge). Usage and cost are what the source recorded for that reply, or None where
it recorded nothing: an import never makes a number up.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.errors import HarnessError
from core.types import ErrorKind, FinishReason, Status, Usage


class BadTrajectory(HarnessError):
    """A file that cannot be imported; the message says what is wrong with it."""


class NotTrajectory(BadTrajectory):
    """A file in no format the importer reads (a predictions file, a report): a batch passes over it."""


class _Form(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Call(_Form):
    id: str
    name: str
    arguments: str  # raw JSON, as a model emits it


class Result(_Form):
    """What one call returned, as the model saw it."""

    call_id: str
    text: str
    status: Status = "ok"
    error_kind: ErrorKind | None = None
    exit_code: int | None = None
    duration_s: float = 0.0


class Compaction(_Form):
    """The source harness replaced its conversation with a summary after a turn (Claude Code's compact)."""

    trigger: str = ""  # as the source names it: auto, manual
    tokens_before: int = 0  # the context's size when it compacted, as the source counted it


class Turn(_Form):
    text: str = ""
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    results: tuple[Result, ...] = ()  # one per call, in call order
    notes: tuple[str, ...] = ()  # user messages the source added after the results, before the next reply
    compaction: Compaction | None = None  # the source compacted its context after the results, before the notes
    usage: Usage | None = None  # None: the source recorded no usage for this reply
    cost_usd: float | None = None  # what the source recorded the reply cost
    model: str = ""
    finish_reason: FinishReason = "stop"
    ts: float | None = None  # when the reply arrived, where recorded (Unix seconds)


class Tool(_Form):
    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None  # None: the source did not record it (and may never have sent one)


class Trajectory(_Form):
    """One run of another harness. `gaps` names what its format does not carry, so nothing downstream
    mistakes a missing figure for a measured one."""

    format: str  # mini-swe-agent, swe-agent, atif, inspect
    format_version: str = ""
    instance_id: str
    agent: str
    agent_version: str = ""
    model: str = ""  # as the source names it
    opening: tuple[tuple[str, str], ...] = ()  # (role, text): system and user messages before the first reply
    turns: tuple[Turn, ...] = ()
    tools: tuple[Tool, ...] = ()
    tools_recorded: bool = False  # the file lists the tools; else they are inferred from the calls
    schemas_sent: bool = True  # False for a text-based agent: the model saw no tool schema, only its prompt
    stop_reason: str = "submitted"
    stop_message: str = ""
    outcome: dict[str, Any] = Field(default_factory=dict)
    submission: str | None = None  # a patch or answer the source collected at the end
    started_ts: float | None = None
    wall_s: float | None = None
    recorded: dict[str, Any] = Field(default_factory=dict)  # the source's own totals: cost, calls, tokens
    gaps: tuple[str, ...] = ()
    part: str = ""  # which run of a file holding several (an Inspect log's sample and epoch)


def inferred_tools(turns: tuple[Turn, ...] | list[Turn]) -> tuple[Tool, ...]:
    """The tools a trajectory called, in first-use order, when its file does not list them."""
    names = dict.fromkeys(c.name for t in turns for c in t.calls)
    return tuple(Tool(name=n) for n in names)
