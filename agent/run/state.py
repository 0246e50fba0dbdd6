"""RunState: what the loop knows between steps, and how one step (a reply and what its calls gave) changes it."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from agent.run.task import Task
from core.memory_types import Fold
from core.types import Message, ModelReply, Observation, Usage
from core.volatile import normalise


@dataclass(frozen=True)
class Dispatched:
    """What one reply's tool calls gave (agent.dispatch): one observation per call, in order."""

    observations: list[Observation]
    submission: str | None = None  # set when a tool ended the run with an answer
    # Questions a tool asked that wait for a person (their ids): that call and the reply's later calls
    # have no observation yet; the run stops awaiting approval and a resume finishes the step.
    awaiting: list[str] = field(default_factory=list)


@dataclass
class RunState:
    task: Task
    history: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = Usage()
    cost_usd: float = 0.0  # the priced model calls' total, summaries and failed calls included
    unpriced_calls: int = 0  # calls whose cost is unknown: more than 0 makes `cost_usd` a lower bound
    failures_in_a_row: int = 0
    no_tool_replies_in_a_row: int = 0
    repeats_in_a_row: int = 0
    last_action: str | None = None  # digest of the previous step's (calls, results), to spot loops
    submission: str | None = None
    folds: list[Fold] = field(default_factory=list)  # compactions so far; the last holds the working memory
    cuts: dict[int, str] = field(default_factory=dict)  # observations an overflow recovery cut: history index -> text
    settled_seq: int = 0  # the last journal event this state has taken in; a snapshot covers up to it
    started: float = field(default_factory=time.monotonic)

    def wall_s(self) -> float:
        return time.monotonic() - self.started


def spend(state: RunState, cost: float | None) -> None:
    """One model call's cost (None: unknown) into the running total that stop.max_cost_usd watches."""
    if cost is None:
        state.unpriced_calls += 1
    else:
        state.cost_usd += cost


def advance(state: RunState, reply: ModelReply, dispatched: Dispatched) -> None:
    """Fold one step's reply and observations into the state."""
    state.history.append(reply.message)
    state.history.extend(o.to_message() for o in dispatched.observations)
    tally(state, reply, dispatched)


def tally(state: RunState, reply: ModelReply, dispatched: Dispatched) -> None:
    """The counters' share of a step (a resume rebuilds the history from the journal instead)."""
    state.usage = state.usage + reply.usage
    obs = dispatched.observations
    if dispatched.submission is not None:
        state.submission = dispatched.submission

    state.no_tool_replies_in_a_row = 0 if obs else state.no_tool_replies_in_a_row + 1
    if any(o.status == "ok" for o in obs):
        state.failures_in_a_row = 0
    elif any(o.counts_as_failure for o in obs):
        state.failures_in_a_row += 1

    # A digest, not the texts: it is compared and saved in every snapshot, whose size must stay bounded.
    # Volatile parts (line numbers, times, temp paths...) are normalised: a loop still repeats when they move.
    action = hashlib.sha256(
        repr(
            (
                tuple((c.name, normalise(c.arguments)) for c in reply.message.tool_calls),
                tuple((o.status, normalise(o.text)) for o in obs),
            )
        ).encode()
    ).hexdigest()
    same = bool(obs) and action == state.last_action
    state.repeats_in_a_row = state.repeats_in_a_row + 1 if same else 1
    state.last_action = action
