"""The ModelClient contract: messages and tools in, one ModelReply out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.policy import ModelParams
from core.types import Message, ModelReply
from tools.base import Tool


class ModelClient(Protocol):
    name: str  # e.g. "openai:gpt-5", "scripted:demo.yaml"

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        """One model call. Raise TransientModelError to be retried, PermanentModelError to stop
        (ContextOverflowError when the prompt is longer than the model's window)."""
        ...

    def close(self) -> None:
        """Free what the client holds (an HTTP client's connections, a local engine it loaded); whoever
        made the client calls it once the client's runs are over."""
        ...


# A client that knows its model's context window also has `context_window(params) -> int | None`
# (agent.models.windows asks it); it is no part of the protocol, since scripted clients have none.


def estimate_tokens(text: str) -> int:
    """Four characters a token: the usual rough figure for English and code."""
    return (len(text) + 3) // 4
