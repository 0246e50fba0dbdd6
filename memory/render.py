"""Render the prompt: a pure function of the history, the folds made so far and the context policy."""

from __future__ import annotations

from collections.abc import Sequence

from core.types import Message
from core.context_policy import Compact, ContextStep, MaskObservations, StripReasoning
from memory.context import mask_observations, strip_reasoning
from core.memory_types import Fold
from memory.folds import render_folds


def render(history: Sequence[Message], steps: Sequence[ContextStep], folds: Sequence[Fold] = ()) -> list[Message]:
    messages = list(history)
    for step in steps:
        if isinstance(step, StripReasoning):
            messages = strip_reasoning(messages, step)
        elif isinstance(step, MaskObservations):
            messages = mask_observations(messages, step)
        elif isinstance(step, Compact):
            messages = render_folds(messages, folds)
    return messages


def compact_step(steps: Sequence[ContextStep]) -> Compact | None:
    return next((s for s in steps if isinstance(s, Compact)), None)
