"""Context policies: pure functions from the run's message history to the prompt.

Each policy is a value (a pydantic model with a `kind`), so a run's context
handling can be printed, diffed and compared. `HarnessPolicy.context` holds a
list of them, applied in order by `memory.render.render`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.types import Message


class _Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StripReasoning(_Step):
    """Drop hidden reasoning from past turns.

    `last_turn` keeps it on the newest assistant message only: a provider that
    signs reasoning (thinking blocks) needs it back within an unfinished tool turn.
    """

    kind: Literal["strip_reasoning"] = "strip_reasoning"
    keep: Literal["none", "last_turn", "all"] = "last_turn"


class MaskObservations(_Step):
    """Keep the newest `keep_last` tool outputs verbatim; older ones become a placeholder."""

    kind: Literal["mask_observations"] = "mask_observations"
    keep_last: int = Field(5, ge=0)


ContextStep = Annotated[StripReasoning | MaskObservations, Field(discriminator="kind")]


def strip_reasoning(messages: list[Message], step: StripReasoning) -> list[Message]:
    if step.keep == "all":
        return messages
    last = _last_index(messages, "assistant") if step.keep == "last_turn" else -1
    return [
        m.model_copy(update={"reasoning": None}) if m.reasoning is not None and i != last else m
        for i, m in enumerate(messages)
    ]


def mask_observations(messages: list[Message], step: MaskObservations) -> list[Message]:
    tool_idx = [i for i, m in enumerate(messages) if m.role == "tool"]
    hide = set(tool_idx[: max(0, len(tool_idx) - step.keep_last)])
    return [
        m.model_copy(update={"text": f"[older output of {m.name} hidden: {len(m.text)} characters]"}) if i in hide else m
        for i, m in enumerate(messages)
    ]


def _last_index(messages: list[Message], role: str) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == role:
            return i
    return -1
