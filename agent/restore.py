"""Rebuild a run's state from its journal and latest snapshot: a pure function, one pass over the events.

The history comes from the `message`, `model_replied` and `tool_observed` events,
in journal order, so the resumed prompt is byte for byte the prompt the
uninterrupted run would have sent. The counters and budgets come from the
snapshot, and only the steps after the snapshot's last seq are folded into them
(with the loop's own `advance`). A step is closed once the journal holds an event
of a later step; the newest step may be open (the process died while it ran):
`Restored.open` then says which of its calls already have results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.approval import Decision, decisions
from agent.dispatch import Dispatched
from core.events import (ApprovalGiven, Compacted, Event, MessageAdded, ModelReplied, RunResumed, SummaryReplied, ToolIntent,
                         ToolObserved)
from agent.reconcile import Recovered
from agent.snapshot import Snapshot, state_from
from agent.state import RunState, tally
from agent.task import Task
from core.types import Message, ModelReply


@dataclass
class OpenStep:
    reply: ModelReply
    recovered: Recovered
    compacted: bool = False  # its compaction is journaled: finishing the step must not compact again


@dataclass
class Restored:
    state: RunState
    open: OpenStep | None  # the newest step, when it was journaled but not finished
    approvals: dict[str, Decision]
    model_replies: int  # a scripted model continues after this many replies (the summariser's included)
    from_seq: int  # the snapshot's last seq the counters start from; 0: folded from the start
    # (history length, folds count) when the last journaled reply's prompt was rendered: rendering
    # that prompt again lets the prefix-reuse accounting go on as if the process had not changed.
    last_prompt: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)  # what a person should know about how it was rebuilt
    # Summariser calls of a compaction the crash cut short (journaled, its `compaction` event not):
    # the resumed compaction is answered from these before the summariser is asked again.
    summaries: list[SummaryReplied] = field(default_factory=list)


@dataclass
class _Step:
    reply: ModelReplied
    history_at: int  # where its messages start in the history
    observed: dict[str, ToolObserved] = field(default_factory=dict)
    intents: dict[str, ToolIntent] = field(default_factory=dict)
    nudged: bool = False
    compacted: bool = False


def restore(task: Task, events: Sequence[Event], snap: Snapshot | None) -> Restored:
    """The state to continue from; falls back to folding from the start when the snapshot disagrees."""
    if snap is not None and (snap.last_seq > (events[-1].seq if events else 0)):
        return _noted(restore(task, events, None), f"snapshot.json covers events up to seq {snap.last_seq}, "
                      "past the end of the journal: ignored it and rebuilt the state from the start")
    restored, window = _fold(task, events, snap)
    if snap is not None and window != snap.window:
        return _noted(restore(task, events, None), "snapshot.json does not match the journal's messages: "
                      "ignored it and rebuilt the state from the start")
    return restored


def _fold(task: Task, events: Sequence[Event], snap: Snapshot | None) -> tuple[Restored, list[Message]]:
    """One pass: every event rebuilds the history; only steps after the snapshot feed the counters."""
    state = RunState(task=task)
    base, want = (snap.last_seq, len(snap.window)) if snap is not None else (0, 0)
    if snap is not None:
        state = state_from(snap, state)
    history = state.history
    window: list[Message] = []
    step: _Step | None = None
    replies = 0
    last_prompt = None
    summaries: list[SummaryReplied] = []
    since_ts = events[0].ts if events else 0.0  # wall time the snapshot has not counted starts here
    for e in events:
        if step is not None and e.step > step.reply.step:  # an event of a later step: that step is closed
            _close(state, step, base)
            step = None
        if isinstance(e, MessageAdded):
            history.append(e.message)
            if step is not None:
                step.nudged = True
        elif isinstance(e, ModelReplied):
            step = _Step(e, history_at=len(history))
            replies += 1
            last_prompt = (len(history), len(state.folds))
            history.append(e.reply.message)
        elif isinstance(e, ToolIntent) and step is not None:
            step.intents[e.call_id] = e
        elif isinstance(e, ToolObserved):
            history.append(e.observation.to_message())
            if step is not None:
                step.observed[e.observation.call_id] = e
        elif isinstance(e, SummaryReplied):
            summaries.append(e)
            replies += e.reply is not None
        elif isinstance(e, Compacted):
            summaries = []
            if e.fold is not None:
                state.folds.append(e.fold)  # folds, like the history, come from the journal, not the snapshot
            if e.seq > base:  # a summary is spending too (the loop adds it to the run's usage)
                state.usage = state.usage + e.summariser_usage
            if step is not None:
                step.compacted = True
        if e.seq == base:
            window, since_ts = (history[-want:] if want else []), e.ts
    if step is not None and step_events_end(events, step) <= base:
        step = None  # the snapshot was taken once this step had finished: it holds all of it, nothing is left to do
    if step is not None:
        state.step = step.reply.step  # the loop finishes this step rather than starting a new one
        del history[step.history_at:]  # and adds its reply and results to the history itself, as a live run does
    if events:  # time the run spent working after the snapshot; a person's decisions came later and do not count
        worked = [e.ts for e in events if not isinstance(e, (ApprovalGiven, RunResumed))]
        state.started -= max(0.0, worked[-1] - since_ts) if worked else 0.0
        # Snapshots taken from here on cover every event before the open step's reply (or every event).
        state.settled_seq = max(state.settled_seq, step.reply.seq - 1 if step is not None else events[-1].seq)
    restored = Restored(state, _open(step, events), decisions(events), replies, base, last_prompt, summaries=summaries)
    return restored, window


def step_events_end(events: Sequence[Event], step: _Step) -> int:
    """The seq of the newest step's last event (it is the newest, so the journal's last but approvals and resumes)."""
    return max(e.seq for e in events if e.step == step.reply.step and not isinstance(e, (ApprovalGiven, RunResumed)))


def _close(state: RunState, step: _Step, base: int) -> None:
    """Fold a finished step into the counters, unless the snapshot already holds it."""
    if step.reply.seq <= base:
        return
    observed = list(step.observed.values())
    submission = next((o.submission for o in observed if o.submission is not None), None)
    tally(state, step.reply.reply, Dispatched([o.observation for o in observed], submission))
    state.step = step.reply.step


def _open(step: _Step | None, events: Sequence[Event]) -> OpenStep | None:
    if step is None:
        return None
    interrupted = {cid: i for cid, i in step.intents.items() if cid not in step.observed}
    rerun = {
        e.call_id: Decision(e.approved, e.note)
        for e in events
        if isinstance(e, ApprovalGiven) and e.call_id in interrupted and e.seq > interrupted[e.call_id].seq
    }
    return OpenStep(step.reply.reply, Recovered(dict(step.observed), interrupted, rerun, step.nudged), step.compacted)


def _noted(restored: Restored, note: str) -> Restored:
    restored.notes.insert(0, note)
    return restored
