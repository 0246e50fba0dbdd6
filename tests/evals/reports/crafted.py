"""Crafted journal events for detector and report tests: real event types, chosen contents."""

from __future__ import annotations

import json
from typing import Any

from core.events import ModelFailed, ModelReplied, ToolObserved
from core.types import Message, ModelReply, Observation, Reasoning, ToolCall, Usage
from evals.reports.steps import Compaction, parse_compaction


def reply(step: int, *calls: tuple[str, dict | str], text: str = "", prompt: int = 1000, cached: int = 0,
          reasoning: str | None = None, reasoning_tokens: int = 0, finish: str | None = None) -> ModelReplied:
    tool_calls = tuple(
        ToolCall(id=f"c{step}_{i}", name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    )
    message = Message(role="assistant", text=text, tool_calls=tool_calls,
                      reasoning=Reasoning(text=reasoning) if reasoning else None)
    usage = Usage(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=50 + reasoning_tokens,
                  reasoning_tokens=reasoning_tokens)
    return ModelReplied(step=step, reply=ModelReply(message=message, usage=usage,
                                                    finish_reason=finish or ("tool_calls" if tool_calls else "stop")),
                        prompt_messages=2 * step, prompt_chars=4 * prompt)


def observed(step: int, index: int, tool: str, text: str = "ok", status: str = "ok", kind: str | None = None,
             duration: float = 0.1) -> ToolObserved:
    return ToolObserved(step=step, observation=Observation(call_id=f"c{step}_{index}", tool=tool, status=status, text=text,
                                                           error_kind=kind, duration_s=duration, executed=True))


def act(step: int, tool: str, args: dict, result: str = "ok", status: str = "ok", kind: str | None = None,
        **reply_kw: Any) -> list:
    """One step with one call and its observation."""
    return [reply(step, (tool, args), **reply_kw), observed(step, 0, tool, result, status, kind)]


def model_failed(step: int, message: str) -> ModelFailed:
    return ModelFailed(step=step, transient=True, message=message)


def compaction(step: int, **fields: Any) -> Compaction:
    """A compaction event as another module may write it: only `type` and `step` are certain."""
    return parse_compaction({"type": "compaction", "seq": 0, "ts": 0.0, "step": step, **fields})
