"""Context policies: pure functions from the run's message history to the prompt.

Each policy is a value (a pydantic model with a `kind`), so a run's context
handling can be printed, diffed and compared. `HarnessPolicy.context` holds a
list of them, applied in order by `memory.render.render`. Only `Compact`
changes how many messages there are, and it works on history indices, so put it
first or after policies that only rewrite text (all the others).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.types import Message


class _Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StripReasoning(_Step):
    """Drop hidden reasoning from past turns.

    `none` drops it everywhere, `last_turn` keeps the newest assistant turn's, `all`
    keeps everything. Whatever the value, a provider's signed blocks
    (`Reasoning.payload`) of an unfinished tool-use turn stay: the provider
    rejects the request without them.
    """

    kind: Literal["strip_reasoning"] = "strip_reasoning"
    keep: Literal["none", "last_turn", "all"] = "last_turn"


class MaskObservations(_Step):
    """Keep the newest `keep_last` tool outputs verbatim; older ones become a one-line placeholder
    that says which tool ran, how much it printed and how it ended."""

    kind: Literal["mask_observations"] = "mask_observations"
    keep_last: int = Field(5, ge=0)
    # Move the mask boundary only in jumps of this many outputs. With 1, every step rewrites one
    # old output and the cache breaks there every step; with K, the prompt is append-only between
    # jumps, at the price of up to K-1 extra verbatim outputs.
    every: int = Field(1, ge=1)


class Compact(_Step):
    """Fold old steps into a structured working memory once the prompt grows past a threshold.

    `layout="rewrite"` (naive): the memory replaces everything between the task and
    the recent steps, and each fold rewrites it, so the cached prefix ends at the task.
    `layout="append"` (cache-aware): each fold appends the memory's changes after the
    earlier ones, so everything before the newest fold stays byte-identical; the notes
    are consolidated into one rewrite only when they outgrow `max_memory_tokens`.
    `summariser_prompt="fork"` asks for the summary by appending one instruction to the
    agent's own prompt (a cache hit on all of it); `fresh` sends a new prompt with a
    readable transcript of the folded steps.
    """

    kind: Literal["compact"] = "compact"
    trigger_tokens: int = Field(16000, ge=1, description="fold when the prompt reaches this many tokens")
    every_steps: int | None = Field(None, ge=1, description="also fold every K steps")
    keep_recent_steps: int = Field(4, ge=0, description="steps kept verbatim after a fold")
    layout: Literal["rewrite", "append"] = "append"
    summariser_prompt: Literal["fresh", "fork"] = "fork"
    summary_max_tokens: int = Field(1024, ge=16, description="the summariser's first token cap; doubled on a cut-off")
    max_memory_tokens: int = Field(4000, ge=1, description="append layout: consolidate notes past this size")


class DiscloseTools(_Step):
    """Send each tool's one-line summary instead of its full schema; `describe_tool` gives the rest
    on demand (see memory/disclosure.py). Changes the tool list, not the messages."""

    kind: Literal["disclose_tools"] = "disclose_tools"
    always_full: list[str] = Field(default_factory=list, description="tools whose full schema is always sent")


ContextStep = Annotated[StripReasoning | MaskObservations | Compact | DiscloseTools, Field(discriminator="kind")]


def strip_reasoning(messages: list[Message], step: StripReasoning) -> list[Message]:
    if step.keep == "all":
        return messages
    newest = _last_index(messages, "assistant")
    pending = newest if newest >= 0 and _turn_unfinished(messages, newest) else -1
    out = []
    for i, m in enumerate(messages):
        if m.reasoning is None:
            out.append(m)
            continue
        keep_text = step.keep == "last_turn" and i == newest
        # Signed blocks go back only while their tool-use turn is unfinished, which is
        # exactly when the provider demands them; later they are dead weight.
        payload = m.reasoning.payload if i == pending else []
        text = m.reasoning.text if keep_text else ""
        if not text and not payload:
            out.append(derived(m, "no-reasoning", lambda m=m: m.model_copy(update={"reasoning": None})))
        elif text == m.reasoning.text and payload == m.reasoning.payload:
            out.append(m)
        else:
            out.append(derived(m, f"reasoning:{bool(text)}:{bool(payload)}", lambda m=m, t=text, p=payload: m.model_copy(
                update={"reasoning": m.reasoning.model_copy(update={"text": t, "payload": p})})))
    return out


def _turn_unfinished(messages: list[Message], i: int) -> bool:
    """The assistant message at i made tool calls and no later assistant turn answered their results."""
    return bool(messages[i].tool_calls) and all(m.role != "assistant" for m in messages[i + 1 :])


def mask_observations(messages: list[Message], step: MaskObservations) -> list[Message]:
    tool_idx = [i for i, m in enumerate(messages) if m.role == "tool"]
    hidden = max(0, len(tool_idx) - step.keep_last)
    hide = set(tool_idx[: hidden - hidden % step.every])
    return [derived(m, "masked", lambda m=m: m.model_copy(update={"text": placeholder(m)})) if i in hide else m
            for i, m in enumerate(messages)]


def placeholder(m: Message) -> str:
    lines = m.text.count("\n") + 1 if m.text else 0
    status = m.status or "unknown"
    return f"[output of {m.name} hidden to save context: {len(m.text)} characters, {lines} lines, status {status}]"


_DERIVED: dict[tuple[int, str], tuple[Message, Message]] = {}
_DERIVED_CAP = 200_000


def derived(m: Message, how: str, make: Callable[[], Message]) -> Message:
    """A policy's rewrite of `m`, made once: re-rendering a long history then allocates nothing,
    and a rewritten message keeps its identity from step to step, so comparing consecutive
    prompts (prefix accounting) runs at C speed. Keyed by identity; the entry holds `m` alive."""
    hit = _DERIVED.get((id(m), how))
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(_DERIVED) >= _DERIVED_CAP:  # a long-lived process must not grow without bound
        _DERIVED.clear()
    out = make()
    _DERIVED[(id(m), how)] = (m, out)
    return out


def _last_index(messages: list[Message], role: str) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == role:
            return i
    return -1
