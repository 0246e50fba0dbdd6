"""Anthropic Messages through the official `anthropic` SDK.

    AnthropicModel("claude-sonnet-4-5")                       # anthropic:claude-sonnet-4-5

Thinking and redacted-thinking blocks are kept verbatim, signatures included, in
`Reasoning.payload`, and sent back as they came within a tool-use turn. Cache
breakpoints follow `ModelParams.cache_breakpoints`. Timeouts and SDK retries come from
the policy, as for OpenAI.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anthropic

from agent.models.convert import ANTHROPIC_FINISH, anthropic_usage, reasoning_payload, to_anthropic
from agent.models.provider_errors import NotAReply, read_reply, timeouts
from core.policy import ModelParams
from core.types import Message, ModelReply, Reasoning, ToolCall
from tools.base import Tool, anthropic_schema

TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


class AnthropicModel:
    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        name: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        self.model = model
        self.name = name or (f"anthropic:{model}" if base_url is None else f"anthropic-compatible:{base_url}#{model}")
        self.key_env = "ANTHROPIC_API_KEY"
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, default_headers=headers)

    def request(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> dict:
        system, msgs = to_anthropic(messages, params.cache_breakpoints, params.cache_ttl)
        kwargs: dict = {"model": self.model, "max_tokens": params.max_tokens, "messages": msgs}
        if system:
            kwargs["system"] = system
        if tools:
            schemas = [anthropic_schema(t) for t in tools]
            if "tools" in params.cache_breakpoints:
                schemas[-1]["cache_control"] = {"type": "ephemeral", "ttl": params.cache_ttl}
            kwargs["tools"] = schemas
            kwargs["tool_choice"] = {"type": TOOL_CHOICE[params.tool_choice]}
        if params.thinking_budget:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": params.thinking_budget}
        else:
            # SDK 1.0 dropped `temperature` from the signature; the API still takes it in the body.
            kwargs["extra_body"] = {"temperature": params.temperature}
        return kwargs

    def close(self) -> None:
        self.client.close()

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        client = self.client.with_options(timeout=timeouts(params, anthropic.Timeout), max_retries=params.sdk_retries)
        return read_reply(
            lambda: client.messages.with_raw_response.create(**self.request(messages, tools, params)),
            to_reply,
            anthropic_usage,
            anthropic.AnthropicError,
            self.name,
            self.key_env,
        )


def to_reply(response, name: str, latency_s: float) -> ModelReply:
    if not isinstance(response, anthropic.types.Message):
        raise NotAReply("it is not a JSON message")
    if not isinstance(response.content, list):
        raise NotAReply("its `content` is not a list of blocks")
    texts, calls, payload, thoughts = [], [], [], []
    for block in response.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input, ensure_ascii=False)))
        elif (param := reasoning_payload(block)) is not None:
            payload.append(param)
            if block.type == "thinking":
                thoughts.append(block.thinking)
    reasoning = Reasoning(text="\n".join(thoughts), provider="anthropic", payload=payload) if payload else None
    finish = ANTHROPIC_FINISH.get(response.stop_reason or "", "other")
    return ModelReply(
        message=Message(role="assistant", text="".join(texts), tool_calls=tuple(calls), reasoning=reasoning),
        usage=anthropic_usage(response.usage),
        finish_reason=finish,
        model=response.model or name,
        latency_s=latency_s,
    )
