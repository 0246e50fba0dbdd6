"""Rebuild a run's state from its journal and latest snapshot: a pure function of the step fold (agent.steps).

The history comes from the `message`, `model_replied` and `tool_observed` events,
in journal order, so the resumed prompt is byte for byte the prompt the
uninterrupted run would have sent. The counters and budgets come from the
snapshot, and only the steps after the snapshot's last seq are folded into them
(with the loop's own `advance`). A step is closed once the journal holds an event
of a later step; the newest step may be open (the process died while it ran):
`Restored.open` then says which of its calls already have results.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.approval import Decision, decisions
from agent.dispatch import Dispatched
from agent.steps import Step, fold
from core.events import ApprovalGiven, Event, ModelReplied, RunResumed
from agent.reconcile import Recovered
from agent.snapshot import Snapshot, state_from
from agent.state import RunState, tally
from agent.task import Task
from core.types import Message, ModelReply


@dataclass
class OpenStep:
    reply: ModelReply
    recovered: Recovered


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


def restore(task: Task, events: Sequence[Event], snap: Snapshot | None) -> Restored:
    """The state to continue from; falls back to folding from the start when the snapshot disagrees."""
    if snap is not None and (snap.last_seq > (events[-1].seq if events else 0)):
        return _noted(restore(task, events, None), f"snapshot.json covers events up to seq {snap.last_seq}, "
                      "past the end of the journal: ignored it and rebuilt the state from the start")
    restored, window = _restore(task, events, snap)
    if snap is not None and window != snap.window:
        return _noted(restore(task, events, None), "snapshot.json does not match the journal's messages: "
                      "ignored it and rebuilt the state from the start")
    return restored


def _restore(task: Task, events: Sequence[Event], snap: Snapshot | None) -> tuple[Restored, list[Message]]:
    """The history and folds come from every event; only steps after the snapshot feed the counters."""
    state = RunState(task=task)
    base, want = (snap.last_seq, len(snap.window)) if snap is not None else (0, 0)
    if snap is not None:
        state = state_from(snap, state)
    run = fold(events)
    state.history.extend(run.history)
    state.folds.extend(c.fold for s in run.steps for c in s.compactions if c.fold is not None)
    replies = [(s, s.replied) for s in run.steps if s.replied is not None]
    latest = max((e.step for e in events), default=0)
    # The newest step is open (the process died while it ran) until the journal holds an event of a later step.
    open_step = replies[-1] if replies and replies[-1][0].n == latest else None
    closed = replies[:-1] if open_step is not None else replies
    for step, replied in closed:
        if replied.seq > base:  # the snapshot already holds the steps before it
            submission = next((o.submission for o in step.observed if o.submission is not None), None)
            tally(state, replied.reply, Dispatched(step.observations, submission))
            state.step = step.n
    at_base = next((e for e in events if e.seq == base), None)
    window = state.history[: bisect_right(run.seqs, base)][-want:] if at_base is not None and want else []
    last_prompt = (replies[-1][0].history_at, len(run.folds_before(replies[-1][0]))) if replies else None
    if open_step is not None:
        state.step = open_step[0].n  # the loop finishes this step rather than starting a new one
        del state.history[open_step[0].history_at :]  # and adds its reply and results to the history itself, as a live run does
    if events:  # time the run spent working after the snapshot; a person's decisions came later and do not count
        since_ts = at_base.ts if at_base is not None else events[0].ts
        worked = [e.ts for e in events if not isinstance(e, (ApprovalGiven, RunResumed))]
        state.started -= max(0.0, worked[-1] - since_ts) if worked else 0.0
        # Snapshots taken from here on cover every event before the open step's reply (or every event).
        state.settled_seq = max(state.settled_seq, open_step[1].seq - 1 if open_step is not None else events[-1].seq)
    return Restored(state, _open(open_step, events), decisions(events), run.model_calls, base, last_prompt), window


def _open(found: tuple[Step, ModelReplied] | None, events: Sequence[Event]) -> OpenStep | None:
    if found is None:
        return None
    step, replied = found
    observed = {o.observation.call_id: o for o in step.observed}
    interrupted = {i.call_id: i for i in step.intents if i.call_id not in observed}
    rerun = {
        e.call_id: Decision(e.approved, e.note)
        for e in events
        if isinstance(e, ApprovalGiven) and e.call_id in interrupted and e.seq > interrupted[e.call_id].seq
    }
    return OpenStep(replied.reply, Recovered(observed, interrupted, rerun, bool(step.notes)))


def _noted(restored: Restored, note: str) -> Restored:
    restored.notes.insert(0, note)
    return restored
