"""OpenAI Chat Completions through the official `openai` SDK, for OpenAI or any compatible server.

    OpenAIModel("gpt-5")                                              # openai:gpt-5
    OpenAIModel("smollm2", base_url="http://127.0.0.1:8000/v1")       # openai-compatible:...#smollm2

HTTP timeouts and the SDK's own retries come from the policy's ModelParams (SDK
retries default to none: the harness's retry policy decides, from the transient and
permanent errors this client raises; a malformed 200 reply is transient).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

import openai

from agent.models.convert import OPENAI_FINISH, openai_usage, to_openai
from agent.models.provider_errors import UNREADABLE, NotAReply, read_reply, timeouts
from core.policy import ModelParams
from core.types import Message, ModelReply, Reasoning, ToolCall
from tools.base import Tool, openai_schema

# OpenAI's reasoning models refuse any temperature but the default.
NO_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")


class OpenAIModel:
    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        name: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        self.model = model
        self.official = base_url is None
        self.name = name or (f"openai:{model}" if self.official else f"openai-compatible:{base_url}#{model}")
        self.key_env = "OPENAI_API_KEY"
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, default_headers=headers)
        self.window: int | None = None
        self.window_asked = False

    def context_window(self, params: ModelParams) -> int | None:
        """What a compatible server's /v1/models says of this model, asked once; None from OpenAI itself,
        whose model list gives no window, and from a server that does not say."""
        if not self.window_asked:
            self.window = None if self.official else listed_window(self.client, self.model, params)
            self.window_asked = True
        return self.window

    def request(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> dict:
        """The keyword arguments of `chat.completions.create` for this call."""
        kwargs: dict = {"model": self.model, "messages": to_openai(messages)}
        if tools:
            kwargs["tools"] = [openai_schema(t) for t in tools]
            kwargs["tool_choice"] = params.tool_choice
        # The official API prefers max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers widely know only max_tokens.
        kwargs["max_completion_tokens" if self.official else "max_tokens"] = params.max_tokens
        if not (self.official and NO_TEMPERATURE.match(self.model)):
            kwargs["temperature"] = params.temperature
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.reply_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": params.reply_schema},
            }
        return kwargs

    def close(self) -> None:
        self.client.close()

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        client = self.client.with_options(timeout=timeouts(params, openai.Timeout), max_retries=params.sdk_retries)
        return read_reply(
            lambda: client.chat.completions.with_raw_response.create(**self.request(messages, tools, params)),
            to_reply,
            openai_usage,
            openai.OpenAIError,
            self.name,
            self.key_env,
        )


def listed_window(client: openai.OpenAI, model: str, params: ModelParams) -> int | None:
    """`context_window` (as `harness serve` says it) or `max_model_len` (as vLLM does) of `model` in the
    server's model list."""
    try:
        cards = list(client.with_options(timeout=timeouts(params, openai.Timeout), max_retries=0).models.list())
    except (openai.OpenAIError, *UNREADABLE):  # no model list, or not one the SDK can read: the window is unknown
        return None
    for card in (c for c in cards if c.id == model):
        extra = card.model_extra or {}
        for key in ("context_window", "max_model_len"):
            if isinstance(extra.get(key), int):
                return extra[key]
    return None


def to_reply(response, name: str, latency_s: float) -> ModelReply:
    if not isinstance(response, openai.types.chat.ChatCompletion):
        raise NotAReply("it is not a JSON chat completion")
    if not response.choices:
        raise NotAReply("its `choices` list is empty or missing")
    choice = response.choices[0]
    msg = choice.message
    calls = []
    for c in msg.tool_calls or []:
        if c.type == "function":
            calls.append(
                ToolCall(
                    id=c.id or f"call_{uuid.uuid4().hex[:12]}",
                    name=c.function.name,
                    arguments=c.function.arguments or "",
                )
            )
        elif c.type == "custom":
            calls.append(ToolCall(id=c.id, name=c.custom.name, arguments=c.custom.input))
    # Compatible servers (vLLM, DeepSeek) return hidden reasoning as `reasoning_content`.
    extra = msg.model_extra or {}
    thought = extra.get("reasoning_content") or extra.get("reasoning")
    reasoning = Reasoning(text=thought, provider="openai") if isinstance(thought, str) and thought else None
    finish = OPENAI_FINISH.get(choice.finish_reason or "", "other")
    timings = (response.model_extra or {}).get("timings")  # `harness serve` says when its first token came
    ttft_ms = timings.get("ttft_ms") if isinstance(timings, dict) else None
    if calls and finish == "stop":
        finish = "tool_calls"
    return ModelReply(
        message=Message(role="assistant", text=msg.content or "", tool_calls=tuple(calls), reasoning=reasoning),
        usage=openai_usage(response.usage),
        finish_reason=finish,
        model=response.model or name,
        latency_s=latency_s,
        ttft_s=ttft_ms / 1000 if isinstance(ttft_ms, int | float) else None,
    )
