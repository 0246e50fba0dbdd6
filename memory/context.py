"""Context steps as pure functions from the run's message history to the prompt.

The steps' settings are values in core.context_policy; this module holds what they do.
"""

from __future__ import annotations

from collections.abc import Callable

from core.context_policy import MaskObservations, StripReasoning
from core.types import Message


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
