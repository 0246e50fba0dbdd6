"""Typed contracts that flow through the loop: messages, calls, observations, usage, replies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
Status = Literal["ok", "error", "rejected", "timeout", "denied"]

# Why an observation is not `ok`. Reports and the summary count these.
ErrorKind = Literal[
    "bad_json",
    "unknown_tool",
    "invalid_args",
    "tool_raised",
    "nonzero_exit",
    "tool_error",
    "timeout",
    "sandbox_dead",
    "denied",
    "rejected",
    "domain",
    "interrupted",  # a crash cut the call short and whether it took effect is unknown
]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(Frozen):
    id: str
    name: str
    arguments: str  # the raw string the model emitted; may be invalid JSON


class Reasoning(Frozen):
    """Hidden chain of thought, kept apart from visible text.

    `payload` holds provider blocks that must be sent back verbatim (for example
    signed thinking blocks); a context policy decides whether it is ever resent.
    """

    text: str = ""
    provider: str | None = None
    payload: list[dict[str, Any]] = Field(default_factory=list)


class Message(Frozen):
    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: Reasoning | None = None
    tool_call_id: str | None = None  # on tool messages: the call this answers
    name: str | None = None  # on tool messages: the tool's name
    status: Status | None = None  # on tool messages: the observation's status, for context policies


class Truncation(Frozen):
    original_chars: int
    kept_chars: int
    artifact: str | None = None  # path, relative to the run dir, of the full text


class Observation(Frozen):
    call_id: str
    tool: str
    status: Status
    text: str
    error_kind: ErrorKind | None = None
    truncation: Truncation | None = None
    exit_code: int | None = None
    duration_s: float = 0.0
    executed: bool = False  # the tool's run function was entered (side effects possible)

    @property
    def counts_as_failure(self) -> bool:
        """Failures feed the consecutive-failure backstop; domain errors never do."""
        return self.status != "ok" and self.error_kind != "domain"

    def to_message(self) -> Message:
        return Message(role="tool", text=self.text, tool_call_id=self.call_id, name=self.tool, status=self.status)


class Usage(Frozen):
    prompt_tokens: int = 0  # includes cached tokens
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the provider's cache
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]


class ModelReply(Frozen):
    message: Message  # role == "assistant"
    usage: Usage = Usage()
    finish_reason: FinishReason = "stop"
    model: str = ""
    latency_s: float = 0.0
    # As the serving engine measured it (the local engine, or `harness serve`'s `timings`), queueing
    # included; None where the provider does not say.
    ttft_s: float | None = None
