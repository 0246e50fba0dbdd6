"""Folds: the record of each compaction, and how folded history renders into the prompt.

A fold's prompt text is fixed when the fold is made and stored with it, so
every later render of that fold is byte-identical: nothing earlier in the
prompt is ever re-rendered differently, which is what keeps a prefix cache warm.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from core.memory_types import Fold, WorkingMemory, current_json, memory_text, superseded_text
from core.types import Message


def head_len(history: Sequence[Message]) -> int:
    """System prompt and task: everything before the first assistant turn. It always leads the prompt."""
    for i, m in enumerate(history):
        if m.role == "assistant":
            return i
    return len(history)


def notes_at(history: Sequence[Message], folds: Sequence[Fold]) -> int:
    """Where the memory notes go: after the head and the steps the first fold kept verbatim."""
    first = folds[0].start if folds else None
    return head_len(history) if first is None else first


def note(fold: Fold) -> Message:
    """The user message a fold puts into the prompt."""
    return Message(role="user", text=fold.text)


def memory_note(fold: Fold) -> Message | None:
    """The user message of the agent's memory as a fold left it, if it has one."""
    return Message(role="user", text=fold.memory_text) if fold.memory_text else None


def render_folds(
    history: Sequence[Message],
    folds: Sequence[Fold],
    note: Callable[[Fold], Message] = note,
    memory: Callable[[Fold], Message | None] = memory_note,
) -> list[Message]:
    """Head and the steps kept first, then the working-memory notes since the last restart (in order) and the
    agent's memory as the newest fold left it, then the unfolded steps."""
    if not folds:
        return list(history)
    start = max(i for i, f in enumerate(folds) if f.restart or i == 0)
    notes = [note(f) for f in folds[start:]]
    kept = memory(folds[-1])
    notes += [kept] if kept is not None else []
    return list(history[: notes_at(history, folds)]) + notes + list(history[folds[-1].upto :])


def full_text(memory: WorkingMemory, version: int, steps: tuple[int, int]) -> str:
    return memory_text(memory, version, steps)


def delta_text(previous: WorkingMemory, memory: WorkingMemory, version: int, steps: tuple[int, int]) -> str:
    """Only what changed since the previous version, so a fold can be appended instead of rewritten. A fact a
    newer value superseded is not listed as removed: it is among the values superseded since, one line each."""
    old, new = current_json(previous), current_json(memory)
    gone = {s.about for s in memory.superseded[len(previous.superseded) :]}
    changes: dict[str, dict] = {"set": {}, "added": {}, "removed": {}}
    for key in sorted(set(old) | set(new)):
        value, before = new.get(key), old.get(key)
        if isinstance(value, list) and isinstance(before, list):
            added = [x for x in value if x not in before]
            removed = [x for x in before if x not in value and not (key == "facts" and x["about"] in gone)]
            if added:
                changes["added"][key] = added
            if removed:
                changes["removed"][key] = removed
        elif value != before and value is not None:
            changes["set"][key] = value
    body = json.dumps({k: v for k, v in changes.items() if v}, sort_keys=True, indent=1, ensure_ascii=False)
    return (
        f"[Working memory v{version} (steps {steps[0]}-{steps[1]} folded): changes since v{version - 1}. "
        f"Earlier notes still hold unless removed here.]\n{body}"
        + superseded_text(memory.superseded[len(previous.superseded) :])
    )
