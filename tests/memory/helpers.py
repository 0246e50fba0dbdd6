"""Builders for the memory tests: histories made of real Messages, as the loop makes them."""

from __future__ import annotations

import json

from core.types import Message, Observation, Reasoning, ToolCall

SYSTEM = Message(role="system", text="You are an agent.")
TASK = Message(role="user", text="Fix the failing test in pkg/.")


def step(
    i: int,
    output: str = "ok",
    status: str = "ok",
    tool: str = "shell",
    reasoning: str | None = None,
    payload: list | None = None,
) -> list[Message]:
    """One step: an assistant turn with one tool call, and its observation."""
    call = ToolCall(id=f"c{i}", name=tool, arguments=json.dumps({"command": f"cmd {i}"}))
    r = Reasoning(text=reasoning, payload=payload or []) if reasoning or payload else None
    reply = Message(role="assistant", text=f"step {i}", tool_calls=(call,), reasoning=r)
    obs = Observation(call_id=call.id, tool=tool, status=status, text=output)
    return [reply, obs.to_message()]


def history(n: int, **kw) -> list[Message]:
    out = [SYSTEM, TASK]
    for i in range(1, n + 1):
        out += step(i, **kw)
    return out
