"""RunState: what the loop knows between steps, and how one step changes it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from agent.dispatch import Dispatched
from agent.task import Task
from agent.types import Message, ModelReply, Usage
from memory.folds import Fold


@dataclass
class RunState:
    task: Task
    history: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = Usage()
    failures_in_a_row: int = 0
    no_tool_replies_in_a_row: int = 0
    repeats_in_a_row: int = 0
    last_action: tuple | None = None  # (calls, results) of the previous step, to spot loops
    submission: str | None = None
    folds: list[Fold] = field(default_factory=list)  # compactions so far; the last holds the working memory
    started: float = field(default_factory=time.monotonic)

    def wall_s(self) -> float:
        return time.monotonic() - self.started


def advance(state: RunState, reply: ModelReply, dispatched: Dispatched) -> None:
    """Fold one step's reply and observations into the state."""
    state.usage = state.usage + reply.usage
    state.history.append(reply.message)
    obs = dispatched.observations
    state.history.extend(o.to_message() for o in obs)
    if dispatched.submission is not None:
        state.submission = dispatched.submission

    state.no_tool_replies_in_a_row = 0 if obs else state.no_tool_replies_in_a_row + 1
    if any(o.status == "ok" for o in obs):
        state.failures_in_a_row = 0
    elif any(o.counts_as_failure for o in obs):
        state.failures_in_a_row += 1

    action = (
        tuple((c.name, c.arguments) for c in reply.message.tool_calls),
        tuple((o.status, o.text) for o in obs),
    )
    same = bool(obs) and action == state.last_action
    state.repeats_in_a_row = state.repeats_in_a_row + 1 if same else 1
    state.last_action = action
