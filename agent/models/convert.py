"""Translations between the harness's messages and the provider wire formats.

Pure functions, no SDK calls: harness `Message`s to OpenAI Chat Completions messages
or to Anthropic `system` + `messages` (with optional cache breakpoints), and provider
finish reasons and usage back to the harness's `ModelReply` vocabulary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.types import FinishReason, Message, Usage

# ------------------------------------------------------------------ OpenAI


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in m.tool_calls
                ]
            elif not m.text:
                msg["content"] = ""
            out.append(msg)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.text})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


OPENAI_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def openai_usage(usage: Any) -> Usage:
    """`prompt_tokens` already includes the cached ones; either details object may be missing."""
    if usage is None:
        return Usage()
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        cached_tokens=(getattr(prompt_details, "cached_tokens", None) or 0),
        reasoning_tokens=(getattr(completion_details, "reasoning_tokens", None) or 0),
    )


# ------------------------------------------------------------------ Anthropic


def _tool_input(arguments: str) -> dict[str, Any]:
    """Anthropic carries tool input as an object; a call whose raw arguments are not one
    (only possible if it came from elsewhere) is sent with the raw text kept visible."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if m.reasoning is not None and m.reasoning.provider == "anthropic":
        # Signed thinking blocks go back exactly as received, or the API rejects the turn.
        blocks.extend(dict(b) for b in m.reasoning.payload)
    if m.text:
        blocks.append({"type": "text", "text": m.text})
    for c in m.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c.arguments)})
    if not blocks:
        blocks.append({"type": "text", "text": "(no reply)"})  # the API rejects empty content
    return blocks


def to_anthropic(
    messages: Sequence[Message], breakpoints: Sequence[str] = (), ttl: str = "5m"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages). Consecutive user-side turns (tool results, notes) merge into
    one user message, tool results first, as the API expects."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []

    def user_blocks() -> list[dict[str, Any]]:
        if not out or out[-1]["role"] != "user":
            out.append({"role": "user", "content": []})
        return out[-1]["content"]

    for m in messages:
        if m.role == "system":
            system.append({"type": "text", "text": m.text})
        elif m.role == "user":
            user_blocks().append({"type": "text", "text": m.text or "(empty)"})
        elif m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.text}
            if getattr(m, "status", None) not in (None, "ok"):  # tool messages carry it on newer types
                block["is_error"] = True
            blocks = user_blocks()
            at = sum(1 for b in blocks if b["type"] == "tool_result")
            blocks.insert(at, block)
        else:
            out.append({"role": "assistant", "content": _assistant_blocks(m)})
    mark = {"type": "ephemeral", "ttl": ttl}
    if "system" in breakpoints and system:
        system[-1]["cache_control"] = mark
    if "last_message" in breakpoints and out:
        out[-1]["content"][-1]["cache_control"] = mark
    return system, out


def reasoning_payload(block: Any) -> dict[str, Any] | None:
    """A thinking or redacted_thinking block as the request param that sends it back verbatim."""
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return None


ANTHROPIC_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def anthropic_usage(usage: Any) -> Usage:
    """Anthropic's `input_tokens` excludes cache reads and writes; the harness's prompt includes both."""
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    details = getattr(usage, "output_tokens_details", None)
    return Usage(
        prompt_tokens=(usage.input_tokens or 0) + read + written,
        completion_tokens=usage.output_tokens or 0,
        cached_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=(getattr(details, "thinking_tokens", None) or 0),
    )
