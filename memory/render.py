"""Render the prompt: a pure function of the history and the context policy."""

from __future__ import annotations

from collections.abc import Sequence

from agent.types import Message
from memory.context import ContextStep, MaskObservations, StripReasoning, mask_observations, strip_reasoning


def render(history: Sequence[Message], steps: Sequence[ContextStep]) -> list[Message]:
    messages = list(history)
    for step in steps:
        if isinstance(step, StripReasoning):
            messages = strip_reasoning(messages, step)
        elif isinstance(step, MaskObservations):
            messages = mask_observations(messages, step)
    return messages
