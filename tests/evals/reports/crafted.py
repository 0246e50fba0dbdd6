"""Crafted journal events for detector and report tests: real event types, chosen contents."""

from __future__ import annotations

import json
from typing import Any

from core.events import Compacted, ModelFailed, ModelReplied, ToolObserved
from core.memory_types import Fold, WorkingMemory
from core.types import Message, ModelReply, Observation, Reasoning, ToolCall, Usage


def reply(
    step: int,
    *calls: tuple[str, dict | str],
    text: str = "",
    prompt: int = 1000,
    cached: int = 0,
    reasoning: str | None = None,
    reasoning_tokens: int = 0,
    finish: str | None = None,
) -> ModelReplied:
    tool_calls = tuple(
        ToolCall(id=f"c{step}_{i}", name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    )
    message = Message(
        role="assistant", text=text, tool_calls=tool_calls, reasoning=Reasoning(text=reasoning) if reasoning else None
    )
    usage = Usage(
        prompt_tokens=prompt,
        cached_tokens=cached,
        completion_tokens=50 + reasoning_tokens,
        reasoning_tokens=reasoning_tokens,
    )
    return ModelReplied(
        step=step,
        reply=ModelReply(
            message=message, usage=usage, finish_reason=finish or ("tool_calls" if tool_calls else "stop")
        ),
        prompt_messages=2 * step,
        prompt_chars=4 * prompt,
    )


def observed(
    step: int,
    index: int,
    tool: str,
    text: str = "ok",
    status: str = "ok",
    kind: str | None = None,
    duration: float = 0.1,
) -> ToolObserved:
    return ToolObserved(
        step=step,
        observation=Observation(
            call_id=f"c{step}_{index}",
            tool=tool,
            status=status,
            text=text,
            error_kind=kind,
            duration_s=duration,
            executed=True,
        ),
    )


def act(
    step: int, tool: str, args: dict, result: str = "ok", status: str = "ok", kind: str | None = None, **reply_kw: Any
) -> list:
    """One step with one call and its observation."""
    return [reply(step, (tool, args), **reply_kw), observed(step, 0, tool, result, status, kind)]


def model_failed(step: int, message: str) -> ModelFailed:
    return ModelFailed(step=step, transient=True, message=message)


def compaction(
    step: int,
    *,
    ok: bool = True,
    tokens_before: int = 0,
    tokens_after: int = 0,
    memory: dict | None = None,
    folded: tuple[int, int] | None = None,
    text: str = "",
    restart: bool = True,
    cut_off: bool = False,
    finish_reason: str = "stop",
) -> Compacted:
    """A compaction after `step`; when it succeeded, a fold of `folded` (default: every step so far)."""
    first, last = folded or (1, step)
    fold = (
        Fold(
            version=1,
            upto=0,
            first_step=first,
            last_step=last,
            memory=WorkingMemory(**(memory or {})),
            text=text,
            restart=restart,
            at_step=step,
        )
        if ok
        else None
    )
    return Compacted(
        step=step,
        ok=ok,
        trigger="tokens",
        version=1 if ok else None,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        fold=fold,
        summariser_usage=Usage(),
        finish_reason=finish_reason,
        cut_off=cut_off,
    )
