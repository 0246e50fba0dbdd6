"""A recording's lives: the processes that wrote its journal, one after another, and where each one stopped.

A run that was killed (kill -9), interrupted (Ctrl-C, SIGTERM), stopped for approval or by a failure and then
resumed was written by several processes. Each resumed one began with a `resumed` event, rebuilt its state from
the journal and settled what the one before left open. A replay goes through the same lives: it stops each one
right after the event its process last wrote, as that process stopped (killed: nothing more happens; stopped: the
run stops there, with its snapshot and summary), puts in what was written between two lives (a person's approval
decisions), and resumes the replayed run as the recorded one was resumed. So the recovery itself is replayed, and a
call that was in flight when a process stopped is settled again, from the replay's own journal.

Only the events the replay makes again are counted to find a life's end: not a failed model call's, nor the
sandbox's, nor those that other commands write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from core.events import (
    ApprovalGiven,
    Compacted,
    ContextOverflowed,
    Event,
    InputRequested,
    MemoryWritten,
    MessageAdded,
    ModelReplied,
    RunResumed,
    RunStopped,
    SummaryReplied,
    ToolIntent,
    ToolObserved,
)
from core.interrupts import request

# What a replay writes again, event for event.
COUNTED = (
    MessageAdded,
    ModelReplied,
    ToolIntent,
    ToolObserved,
    MemoryWritten,
    InputRequested,
    Compacted,
    ContextOverflowed,
    SummaryReplied,
    RunResumed,
)


@dataclass(frozen=True)
class Life:
    counted: int  # counted events of the recording up to this life's end, earlier lives included
    ended: Literal["killed", "stopped", "awaiting", "last"]  # awaiting: it stopped for approval, as a replay will
    signal: str = "SIGINT"  # for "stopped": the signal the stop is asked with (which one does not change the journal)
    given: tuple[Event, ...] = ()  # what other commands wrote before the next life began (approvals)


class LifeEnded(BaseException):
    """Raised out of a replayed life at its end, as a kill ends a process: nothing after it runs."""


def lives(recorded: Sequence[Event]) -> list[Life]:
    """The recording's lives, split at its `resumed` events; one life for a run written by one process."""
    out: list[Life] = []
    counted = 0
    stop: RunStopped | None = None
    given: list[Event] = []
    for e in recorded:
        if isinstance(e, RunResumed):
            out.append(_ended(counted, stop, given))
            stop, given = None, []
        if isinstance(e, COUNTED):
            counted += 1
        elif isinstance(e, RunStopped):
            stop = e
        elif isinstance(e, ApprovalGiven):
            given.append(e)
    return [*out, Life(counted, "last")]


def _ended(counted: int, stop: RunStopped | None, given: Sequence[Event]) -> Life:
    if stop is None:
        return Life(counted, "killed", given=tuple(given))
    if stop.reason == "awaiting_approval":
        return Life(counted, "awaiting", given=tuple(given))
    return Life(counted, "stopped", str(stop.outcome.get("signal", "SIGINT")), tuple(given))


def ender(life: Life, already: int) -> Callable[[Event], None]:
    """A journal listener that ends the replayed life once the replay has written the life's last counted event:
    raising LifeEnded (a kill), or asking for a stop as the signal did, so that the run stops at its next safe
    point (core.interrupts) as the recorded one did: no event comes between the last one a process wrote and that
    safe point. `already`: counted events the replay's journal held when the life began."""
    seen = [already]

    def listener(event: Event) -> None:
        if not isinstance(event, COUNTED):
            return
        seen[0] += 1
        if seen[0] == life.counted and life.ended == "killed":
            raise LifeEnded()
        if seen[0] == life.counted and life.ended == "stopped":
            request(life.signal)

    return listener


def count(events: Sequence[Event]) -> int:
    return sum(isinstance(e, COUNTED) for e in events)
