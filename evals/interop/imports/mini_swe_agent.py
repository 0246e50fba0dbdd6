"""mini-swe-agent `.traj.json`: `info` (exit status, submission, `model_stats`, config) and `messages`.

v1 (`trajectory_format: mini-swe-agent-1`) is text-based: each reply holds one fenced bash block, answered
by a user message `<returncode>N</returncode><output>...`; a reply with none or several gets a format error
instead. v2 (`mini-swe-agent-1.1`) keeps that mode (its blocks are ```mswea_bash_command) and adds tool
calling: `tool_calls` answered by `role: tool` messages, or, through the Responses API, `object: response`
items answered by `function_call_output` items; it ends with a `role: exit` message. Every reply keeps the
provider's raw response under `extra.response`, with its usage (and, through OpenRouter, its cost).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.interop.imports.actions import BASH, FENCED, bash_call, openai_calls, shell_result, split_action
from evals.interop.imports.form import BadTrajectory, Call, Result, Tool, Trajectory, Turn
from evals.interop.imports.text import fields, items, text_of
from evals.interop.imports.usage import openai_usage, openrouter_cost

# mini-swe-agent's bash tool as its source defines it (models/utils/actions_toolcall.py); files do not carry it.
BASH_TOOL = Tool(
    name="bash",
    description="Execute a bash command",
    input_schema={
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
        "required": ["command"],
    },
)
EXITS = {
    "Submitted": "submitted",
    "LimitsExceeded": "step_budget",
    "TimeExceeded": "wall_budget",
    "RepeatedFormatError": "too_many_failures",
    "ContextWindowExceededError": "context_overflow",
}
FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
    "completed": "stop",  # the Responses API's statuses
    "incomplete": "length",
}


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    fmt = doc.get("trajectory_format")
    if isinstance(fmt, str):
        return fmt.startswith("mini-swe-agent")
    info = doc.get("info")
    return isinstance(doc.get("messages"), list) and isinstance(info, dict) and "mini_version" in info


def read(doc: dict[str, Any], path: Path) -> Iterator[Trajectory]:
    info, messages = doc.get("info"), doc.get("messages")
    if not isinstance(info, dict) or not isinstance(messages, list):
        raise BadTrajectory("it has no `info` object and `messages` list, which every mini-swe-agent trajectory has")
    config = fields(info.get("config"))
    agent_config = fields(config.get("agent"))
    pattern = agent_config.get("action_regex") or FENCED
    reader = _Reader(pattern)
    for m in messages:
        reader.add(fields(m))
    turns = [t.done() for t in reader.turns]
    tool_calling = any(t.native for t in reader.turns)
    stats = fields(info.get("model_stats"))
    exit_status = str(reader.exit_status or info.get("exit_status") or "")
    submission = reader.submission if reader.submission is not None else info.get("submission")
    stop = _stop(exit_status, stats, agent_config)
    fmt = str(doc.get("trajectory_format", "mini-swe-agent-1"))
    stamps = [t.ts for t in turns if t.ts is not None]
    start = reader.first_ts if reader.first_ts is not None else min(stamps, default=None)
    yield Trajectory(
        format="mini-swe-agent",
        format_version=fmt,
        instance_id=str(doc.get("instance_id") or _stem(path)),
        agent="mini-swe-agent",
        agent_version=str(info.get("mini_version", "")),
        model=str(_model_name(config) or next((t.model for t in turns if t.model), "")),
        opening=tuple(reader.opening),
        turns=tuple(turns),
        tools=(BASH_TOOL,) if tool_calling else (BASH,),
        schemas_sent=tool_calling,
        stop_reason=stop,
        stop_message=f"mini-swe-agent's exit status: {exit_status or 'none recorded'}.",
        outcome={"answer": submission} if stop == "submitted" and submission else {},
        submission=submission or None,
        started_ts=start,
        wall_s=(max(stamps) - start) if stamps and start is not None else None,
        recorded={k: stats[k] for k in ("instance_cost", "api_calls") if isinstance(stats.get(k), int | float)},
        gaps=_gaps(tool_calling, turns, reader.first_ts),
    )


class _Open:
    """A reply being read, and what answered it so far."""

    def __init__(self, text: str, calls: list[Call], native: bool, extra: dict[str, Any], raw: dict[str, Any]):
        self.text, self.calls, self.native, self.raw = text, calls, native, raw
        self.extra = extra
        self.results: dict[str, Result] = {}
        self.notes: list[str] = []
        self.ts = _ts(raw)

    def done(self) -> Turn:
        response = fields(self.extra.get("response")) or self.raw  # a Responses API item is its own response
        usage_raw = response.get("usage")
        cost = self.extra.get("cost")
        choice = fields((items(response.get("choices")) or [{}])[0])
        finish = str(choice.get("finish_reason") or response.get("status") or "")
        return Turn(
            text=self.text,
            reasoning=_reasoning(self.raw, choice, response),
            calls=tuple(self.calls),
            results=tuple(self.results[c.id] for c in self.calls if c.id in self.results),
            notes=tuple(self.notes),
            usage=openai_usage(usage_raw),
            cost_usd=float(cost) if isinstance(cost, int | float) else openrouter_cost(usage_raw),
            model=str(response.get("model") or ""),
            finish_reason=FINISH.get(finish, "other") if finish else "stop",
            ts=self.ts,
        )


class _Reader:
    def __init__(self, pattern: str):
        self.pattern = pattern
        self.opening: list[tuple[str, str]] = []
        self.turns: list[_Open] = []
        self.exit_status: str | None = None
        self.submission: str | None = None
        self.first_ts: float | None = None

    def add(self, m: dict[str, Any]) -> None:
        role = m.get("role") or m.get("type")
        extra = fields(m.get("extra"))
        if self.first_ts is None:
            self.first_ts = _ts(m)
        if role == "exit":
            self.exit_status, self.submission = extra.get("exit_status"), extra.get("submission")
            waiting = [c for c in self.turns[-1].calls if c.id not in self.turns[-1].results] if self.turns else []
            if waiting and self.exit_status == "Submitted":  # the submitting command's output is the submission
                self.turns[-1].results[waiting[0].id] = Result(call_id=waiting[0].id, text=str(self.submission or ""))
        elif role == "assistant" or m.get("object") == "response":
            self._reply(m, extra)
        elif not self.turns:
            self.opening.append(("system" if role == "system" else "user", text_of(m.get("content"))))
        elif role in ("tool", "function_call_output"):
            self._result(str(m.get("tool_call_id") or m.get("call_id") or ""), m, extra)
        else:
            self._user(text_of(m.get("content")), extra)

    def _reply(self, m: dict[str, Any], extra: dict[str, Any]) -> None:
        n = len(self.turns) + 1
        native = _native_calls(m)
        if native is not None:
            self.turns.append(_Open(_visible(m), native, True, extra, m))
            return
        text, commands = split_action(text_of(m.get("content")), self.pattern)
        calls = [bash_call(f"call_{n}", commands[0])] if len(commands) == 1 else []
        self.turns.append(_Open(text if calls else text_of(m.get("content")), calls, False, extra, m))

    def _result(self, call_id: str, m: dict[str, Any], extra: dict[str, Any]) -> None:
        turn = self.turns[-1]
        text = text_of(m.get("content", m.get("output")))
        code = extra.get("returncode")
        result = shell_result(call_id, text, code if isinstance(code, int) else None)
        if call_id in {c.id for c in turn.calls}:
            turn.results[call_id] = result
        else:
            turn.notes.append(text)

    def _user(self, text: str, extra: dict[str, Any]) -> None:
        """A text-based reply's first answer is its command's output (or the submission, or a timeout);
        anything else the harness said (a format error, a limit) is a note."""
        turn = self.turns[-1]
        waiting = [c for c in turn.calls if c.id not in turn.results]
        if waiting and extra.get("interrupt_type") != "FormatError":
            code = extra.get("returncode")
            turn.results[waiting[0].id] = shell_result(waiting[0].id, text, code if isinstance(code, int) else None)
        else:
            turn.notes.append(text)


def _native_calls(m: dict[str, Any]) -> list[Call] | None:
    """A tool-calling reply's calls (chat completions or the Responses API); None for a text-based one."""
    if items(m.get("tool_calls")):
        return openai_calls(m["tool_calls"], "call")
    if m.get("object") == "response":
        return [
            Call(
                id=str(item.get("call_id") or item.get("id")),
                name=str(item.get("name", "")),
                arguments=str(item.get("arguments", "{}")),
            )
            for item in items(m.get("output"))
            if isinstance(item, dict) and item.get("type") == "function_call"
        ]
    return None


def _visible(m: dict[str, Any]) -> str:
    if m.get("object") == "response":
        return "\n".join(
            text_of(item.get("content"))
            for item in items(m.get("output"))
            if isinstance(item, dict) and item.get("type") == "message"
        )
    return text_of(m.get("content"))


def _reasoning(m: dict[str, Any], choice: dict[str, Any], response: dict[str, Any]) -> str:
    for source in (m, fields(choice.get("message"))):
        for key in ("reasoning_content", "reasoning"):
            if isinstance(source.get(key), str) and source[key]:
                return source[key]
    summaries = [
        text_of(item.get("summary"))
        for item in items(response.get("output"))
        if isinstance(item, dict) and item.get("type") == "reasoning"
    ]
    return "\n".join(s for s in summaries if s)


def _ts(m: dict[str, Any]) -> float | None:
    """When the message was written (v2's `timestamp`), else, for a reply, when the provider created its response
    (`extra.response.created`, Unix seconds, which v1's replies keep)."""
    extra = fields(m.get("extra"))
    for value in (m.get("timestamp"), extra.get("timestamp"), fields(extra.get("response")).get("created")):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _model_name(config: dict[str, Any]) -> str:
    model = fields(config.get("model"))
    return str(model.get("model_name") or "")


def _stem(path: Path) -> str:
    return re.sub(r"(\.traj)?\.json$", "", path.name)


def _stop(exit_status: str, stats: dict[str, Any], agent_config: dict[str, Any]) -> str:
    if not exit_status:
        return "unfinished"
    reason = EXITS.get(exit_status, "harness_error")
    limit, spent = agent_config.get("cost_limit"), stats.get("instance_cost")
    over_cost = isinstance(limit, int | float) and limit > 0 and isinstance(spent, int | float) and spent >= limit
    return "max_cost" if reason == "step_budget" and over_cost else reason


def _gaps(tool_calling: bool, turns: list[Turn], first_ts: float | None) -> tuple[str, ...]:
    gaps = [
        "the exact prompt bytes mini-swe-agent sent: its messages are kept, the provider's rendering of them "
        "(chat template, tool schema placement) is not",
        "encrypted reasoning blocks (reasoning_details): only the reasoning text is kept",
        "how long each command ran",
    ]
    if tool_calling:
        gaps.append("tool schemas: the file does not carry them; the bash tool's is mini-swe-agent's own")
    else:
        gaps.append(
            "tool schemas: the agent is text-based and sent none; its fenced commands are imported as calls of a "
            "`bash` tool and the user messages answering them as that tool's results"
        )
    if first_ts is None and all(t.ts is None for t in turns):
        gaps.append("timestamps: this version records none, so wall time and the timeline are unknown")
    elif first_ts is None:
        gaps.append("when the run started: the times are the provider's for each response (to the second)")
    if any(t.usage is None for t in turns):
        gaps.append("usage of some replies: their provider response was not kept")
    if any(t.cost_usd is None for t in turns):
        gaps.append("the cost of some replies: only the run's total (info.model_stats.instance_cost) is recorded")
    return tuple(gaps)
