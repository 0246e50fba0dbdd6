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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from agent.journal.store import Journal, read_events
from agent.journal.summary import Summary
from agent.loop import run
from agent.recovery.approval import decisions
from agent.resume import resume
from agent.session import RunSpec, SandboxSpec, open_run
from core.events import (
    ApprovalGiven,
    Compacted,
    ContextOverflowed,
    Event,
    InnerIntent,
    InnerObserved,
    InputRequested,
    MemoryWritten,
    MessageAdded,
    ModelReplied,
    ProgramFiles,
    RunResumed,
    RunStopped,
    SamplingReplied,
    SummaryReplied,
    ToolIntent,
    ToolObserved,
)
from core.interrupts import clear, received, request
from memory.summariser import RecordedSummariser

# What a replay writes again, event for event; not a resource's update, which a replay with `execute` takes from
# its servers, as often as they send it.
COUNTED = (
    MessageAdded,
    ModelReplied,
    ToolIntent,
    ToolObserved,
    InnerIntent,
    InnerObserved,
    ProgramFiles,
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


def replay_lives(recorded: Sequence[Event], spec: RunSpec) -> tuple[Summary | None, Path, list[str]]:
    """Re-drive the run through the lives of its recording: the first opened from `spec`, each later one resumed
    from the replay's own journal. The replay's summary (None when its last life did not end), its folder, and
    what stopped it early (the replay out of step with the recording)."""
    summariser = RecordedSummariser(e for e in recorded if isinstance(e, SummaryReplied))
    replay_dir = Path(spec.out) / str(spec.run_id)

    def first(listeners: Sequence[Callable[[Event], None]], whole: bool) -> Summary:
        with open_run(replace(spec, listeners=[*spec.listeners, *listeners])) as session:
            if not whole and ends_at_once(recorded):
                raise LifeEnded()  # its process stopped while the run was being opened: it made nothing to replay
            return run(
                session,
                approvals=decisions(recorded) if whole else {},  # one life: every decision at once, as it had them
                summariser=summariser,
                sampled=[e for e in recorded if isinstance(e, SamplingReplied)],
            )

    def again(listeners: Sequence[Callable[[Event], None]]) -> Summary | None:
        return resume(
            replay_dir,
            model=spec.model,
            tools=spec.tools,
            sandbox=None if isinstance(spec.sandbox, SandboxSpec) else spec.sandbox,  # a factory, else run.json's
            listeners=listeners,
            stop_rules=spec.stop_rules,
            summariser=summariser,
            clock=spec.memory.clock if spec.memory is not None else time.time,  # the recorded times, in turn
            updates=spec.updates,
            placed=spec.placed,  # a run that begins again places what the recording's opening holds
        ).summary

    summary, notes = through_lives(recorded, replay_dir, first, again)
    return summary, replay_dir, notes


def ends_at_once(recorded: Sequence[Event]) -> bool:
    """Whether the recording's first process stopped before it wrote anything a replay makes again."""
    return lives(recorded)[0].counted == 0


def through_lives(
    recorded: Sequence[Event],
    replay_dir: Path,
    first: Callable[[Sequence[Callable[[Event], None]], bool], Summary],
    again: Callable[[Sequence[Callable[[Event], None]]], Summary | None],
    already: int = 0,
) -> tuple[Summary | None, list[str]]:
    """Drive a replay through the lives of `recorded`. `first(listeners, whole)` opens the replay and runs its
    first life with `listeners` on its journal (`whole`: the recording has one life, so the run goes to its end);
    `again(listeners)` resumes it for each later life. `already`: counted events the replay's journal holds before
    its first life, which `recorded` leaves out (a fork's inherited steps). The summary (None when the last life
    did not end) and what stopped the replay early."""
    ends = [replace(life, counted=life.counted + already) for life in lives(recorded)]
    summary: Summary | None = None
    asked = received()
    try:
        summary = first([ender(ends[0], already)] if len(ends) > 1 else [], len(ends) == 1)
    except LifeEnded:
        pass
    for before, life in zip(ends, ends[1:], strict=False):
        if received() > asked + (before.ended == "stopped"):  # a person's Ctrl-C: the replay stops there
            return summary, ["The replay was stopped by a signal before its last life."]
        clear()  # the stop the replay asked for, as the recorded signal did
        written = read_events(replay_dir)
        if count(written) != before.counted:
            return summary, [out_of_step(before, count(written))]
        asked = received()
        if before.given:  # what `harness approve` wrote between the two processes
            journal = Journal(replay_dir)
            journal.extend(before.given)
            journal.close()
        try:
            summary = again([ender(life, count(written))] if life.ended != "last" else [])
        except LifeEnded:
            summary = None
    return summary, []


def out_of_step(life: Life, written: int) -> str:
    return (
        f"The replay did not stop where the recording's process stopped ({life.ended}, after {life.counted} "
        f"events the replay makes again; the replay had {written}): its later lives were not replayed."
    )
