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
        """One model call. Raise TransientModelError to be retried, PermanentModelError to stop."""
        ...


def estimate_tokens(text: str) -> int:
    """Four characters a token: the usual rough figure for English and code."""
    return (len(text) + 3) // 4
