"""What each context step does to the messages, one stage per step, rewriting only what changed.

The steps' settings are values in core.context_policy; `STAGES` maps each step type to its
stage here. A stage belongs to one run (memory.render.Renderer makes them) and keeps its last
output. It is called with its input and `changed`, the first position where that input may
differ from its previous input, and rewrites its output in place from the first position whose
output can differ, which it returns along with the output for the next stage. So a step of a
long run costs the messages it added, not the whole history; a rewritten message is made once
and keeps its identity from prompt to prompt, which keeps comparing consecutive prompts cheap.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from core.context_policy import Compact, DiscloseTools, MaskObservations, RepoMap, StripReasoning
from core.memory_types import Fold
from core.types import Message, Reasoning
from memory.folds import memory_note, note, notes_at, render_folds
from memory.notes import AS_OF, OPENING

T = TypeVar("T")
MEMORY_NOTES = (OPENING, AS_OF)
# (input, first position that may have changed since the last call, folds) -> (output, the same for it)
Stage = Callable[[list[Message], int, Sequence[Fold]], tuple[list[Message], int]]


class _Once(Generic[T]):
    """`make(x)` for each object x, made once. Keyed by identity; an entry holds x alive, and lives as
    long as the run's renderer."""

    def __init__(self, make: Callable[[Any], T]):
        self.make = make
        self.made: dict[int, tuple[Any, T]] = {}

    def __call__(self, x: Any) -> T:
        hit = self.made.get(id(x))
        if hit is None or hit[0] is not x:
            hit = self.made[id(x)] = (x, self.make(x))
        return hit[1]


class StripStage:
    """Past turns lose their reasoning; the newest assistant turn keeps its text under `last_turn`, and
    its provider-signed blocks while its tool-use turn is unfinished (it made tool calls: no later
    assistant turn can have answered them), because the provider rejects the request without them."""

    def __init__(self, step: StripReasoning):
        self.step = step
        self.stripped = _Once(lambda m: m.model_copy(update={"reasoning": None}))
        self.out: list[Message] = []
        self.newest = -1

    def __call__(self, messages: list[Message], changed: int, folds: Sequence[Fold]) -> tuple[list[Message], int]:
        if self.step.keep == "all":
            return messages, changed
        newest = _last_index(messages, "assistant")
        # The old newest turn's output changes once it is no longer the newest.
        valid = min([changed, *(i for i in (self.newest, newest) if i >= 0)])
        out = self.out
        del out[valid:]
        for i in range(valid, len(messages)):
            m = messages[i]
            out.append(m if m.reasoning is None else self._newest(m, m.reasoning) if i == newest else self.stripped(m))
        self.newest = newest
        return out, valid

    def _newest(self, m: Message, reasoning: Reasoning) -> Message:
        text = reasoning.text if self.step.keep == "last_turn" else ""
        payload = reasoning.payload if m.tool_calls else []
        if not text and not payload:
            return self.stripped(m)
        if text == reasoning.text and payload == reasoning.payload:
            return m
        return m.model_copy(update={"reasoning": reasoning.model_copy(update={"text": text, "payload": payload})})


class MaskStage:
    """All but the newest `keep_last` tool outputs become a one-line placeholder; the boundary moves
    `every` outputs at a time."""

    def __init__(self, step: MaskObservations):
        self.step = step
        self.masked = _Once(lambda m: m.model_copy(update={"text": placeholder(m)}))
        self.out: list[Message] = []
        self.tools: list[int] = []  # positions of the tool messages in the input
        self.hidden = 0  # how many of them are masked

    def __call__(self, messages: list[Message], changed: int, folds: Sequence[Fold]) -> tuple[list[Message], int]:
        tools = self.tools
        del tools[bisect_left(tools, changed) :]
        tools += [i for i in range(changed, len(messages)) if messages[i].role == "tool"]
        over = max(0, len(tools) - self.step.keep_last)
        hidden = over - over % self.step.every
        # Outputs stay valid up to the first tool message whose masking changed, and up to the new input.
        moved = min(hidden, self.hidden)
        valid = min(changed, tools[moved] if moved < len(tools) else len(messages))
        out = self.out
        del out[valid:]
        rank = bisect_left(tools, valid)  # how many tool messages come before `valid`
        for i in range(valid, len(messages)):
            m = messages[i]
            if m.role == "tool":
                out.append(self.masked(m) if rank < hidden else m)
                rank += 1
            else:
                out.append(m)
        self.hidden = hidden
        return out, valid


def placeholder(m: Message) -> str:
    lines = m.text.count("\n") + 1 if m.text else 0
    status = m.status or "unknown"
    return f"[output of {m.name} hidden to save context: {len(m.text)} characters, {lines} lines, status {status}]"


class FoldStage:
    """The head, the memory notes since the last restart, then the unfolded steps (memory.folds)."""

    def __init__(self, step: Compact | None = None):
        self.notes = _Once(note)  # each fold's note made once: consecutive prompts share it by identity
        self.memory = _Once(memory_note)
        self.folds: list[Fold] = []  # the folds of the last call

    def __call__(self, messages: list[Message], changed: int, folds: Sequence[Fold]) -> tuple[list[Message], int]:
        same_folds = len(folds) == len(self.folds) and all(a is b for a, b in zip(folds, self.folds))
        before, self.folds = self.folds, list(folds)
        if not folds:
            return messages, changed if not before else 0
        head = notes_at(messages, folds)
        out = render_folds(messages, folds, self.notes, self.memory)
        if not same_folds or changed < head:
            return out, min(changed, head)
        # Only the unfolded tail can have changed: from where it changed, shifted to its place in `out`.
        return out, len(out) - len(messages) + max(changed, folds[-1].upto)


class WithoutMemory:
    """The prompt as it would be without the agent's memory: its opening note and the folds' memory notes left
    out (a re-render of a run that kept one, under a policy that keeps none)."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.kept: list[int] = [0]  # kept[i]: how many of the input's first i messages are kept

    def __call__(self, messages: list[Message], changed: int, folds: Sequence[Fold]) -> tuple[list[Message], int]:
        kept = self.kept
        del kept[changed + 1 :]
        out = self.out
        del out[kept[-1] :]
        for m in messages[changed:]:
            if not (m.role == "user" and m.text.startswith(MEMORY_NOTES)):
                out.append(m)
            kept.append(len(out))
        return out, kept[changed]


def keep(step: DiscloseTools | RepoMap) -> Stage:
    """Tool disclosure changes the tool list (tools.disclosure) and a repository map the opening prompt
    (made when the run starts), not the messages."""
    return lambda messages, changed, folds: (messages, changed)


# Each step type and how one run's stage for it is made.
STAGES: dict[type, Callable[[Any], Stage]] = {
    StripReasoning: StripStage,
    MaskObservations: MaskStage,
    Compact: FoldStage,
    DiscloseTools: keep,
    RepoMap: keep,
}


def _last_index(messages: Sequence[Message], role: str) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == role:
            return i
    return -1
