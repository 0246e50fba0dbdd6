"""Rebuild a run's state from its journal and latest snapshot: a pure function over the journal's fold.

The history is the fold's (`message`, `model_replied` and `tool_observed` events,
in journal order), so the resumed prompt is byte for byte the prompt the
uninterrupted run would have sent. The counters and budgets come from the
snapshot, and only the steps after the snapshot's last seq are tallied into them
(with the loop's own `tally`). A step is closed once the journal holds an event
of a later step; the newest step may be open (the process died while it ran):
`Restored.open` then says which of its calls already have results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.journal.fold import Step, fold, worked_s
from agent.journal.snapshot import Snapshot, state_from
from agent.recovery.approval import Decision, decisions
from agent.recovery.reconcile import Recovered
from agent.run.state import Dispatched, RunState, spend, tally
from agent.run.task import Task
from core.events import ApprovalGiven, Event, ModelReplied, SamplingReplied, SummaryReplied
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
    from_seq: int  # the snapshot's last seq the counters start from; 0: folded from the start
    # (history length, folds count, cuts) when the last journaled reply's prompt was rendered: rendering
    # that prompt again lets the prefix-reuse accounting go on as if the process had not changed.
    last_prompt: tuple[int, int, dict[int, str]] | None = None
    notes: list[str] = field(default_factory=list)  # what a person should know about how it was rebuilt
    # Summariser calls of a compaction the crash cut short (journaled, its `compaction` event not):
    # the resumed compaction is answered from these before the summariser is asked again.
    summaries: list[SummaryReplied] = field(default_factory=list)
    # The run's model's replies to MCP servers' sampling requests: a call made again is answered from these first.
    samplings: list[SamplingReplied] = field(default_factory=list)
    # The overflow recoveries (agent.overflow) the next step journaled before the crash, before its model call:
    # the resumed step goes on with the ones after them, as the dead process would have.
    recoveries: list[str] = field(default_factory=list)


def restore(task: Task, events: Sequence[Event], snap: Snapshot | None) -> Restored:
    """The state to continue from; falls back to folding from the start when the snapshot disagrees."""
    if snap is not None and (snap.last_seq > (events[-1].seq if events else 0)):
        return _noted(
            restore(task, events, None),
            f"snapshot.json covers events up to seq {snap.last_seq}, "
            "past the end of the journal: ignored it and rebuilt the state from the start",
        )
    restored, window = _fold(task, events, snap)
    if snap is not None and window != snap.window:
        return _noted(
            restore(task, events, None),
            "snapshot.json does not match the journal's messages: ignored it and rebuilt the state from the start",
        )
    return restored


def _fold(task: Task, events: Sequence[Event], snap: Snapshot | None) -> tuple[Restored, list[Message]]:
    """The journal's fold gives the history, folds and steps; only steps after the snapshot feed the counters."""
    run = fold(events)
    state = RunState(task=task)
    base, want = (snap.last_seq, len(snap.window)) if snap is not None else (0, 0)
    if snap is not None:
        state = state_from(snap, state)
    state.history.extend(run.history)
    state.folds.extend(run.folds)  # folds and cuts, like the history, come from the journal, not the snapshot
    state.cuts.update(run.cuts)
    answered = [(s, s.replied) for s in run.steps if s.replied is not None]
    # No event of a later step: the newest is open, unless a fork branched after it (a branch closes its step).
    branched = run.branch is not None and run.branch.step >= answered[-1][0].n if answered else False
    opened = bool(answered) and run.last_step <= answered[-1][0].n and not branched
    for done, replied in answered[:-1] if opened else answered:
        if replied.seq > base:  # the snapshot holds the steps up to its last seq
            submission = next((o.submission for o in done.observed if o.submission is not None), None)
            tally(state, replied.reply, Dispatched(done.observations, submission))
            state.step = done.n
    for c in (c for c in run.reshaping() if c.seq > base):
        state.usage = state.usage + c.summariser_usage  # a summary is spending too: the loop adds it to the run's usage
    for call in (call for s in run.steps for call in s.model_calls if call.seq > base):
        spend(state, call.cost_usd)  # the loop spends as it journals, an open step's reply included
    for sampled in (x.reply for s in run.steps for x in s.samplings if x.seq > base):
        if sampled is not None:  # the loop adds what an MCP server's sampling request used as the model answers it
            state.usage = state.usage + sampled.usage
    mark = next((e for e in reversed(events) if e.seq == base), None)
    window = state.history[: sum(q <= base for q in run.seqs)][-want:] if mark is not None and want else []
    # An open step is left to finish, unless the snapshot was taken once it had finished and holds all of it.
    step = answered[-1] if opened and answered[-1][0].last_seq > base else None
    if step is not None:
        state.step = step[0].n  # the loop finishes this step rather than starting a new one
        del state.history[step[0].history_at :]  # and adds its reply and results to the history, as a live run does
    if events:  # time the run spent working after the snapshot (wall time not in it), its pauses left out
        state.started -= worked_s(events, base if mark is not None else 0)
        # Snapshots taken from here on cover every event before the open step's reply (or every event).
        state.settled_seq = max(state.settled_seq, step[1].seq - 1 if step is not None else events[-1].seq)
    last = answered[-1][0] if answered and not branched else None  # a fork's prefix reuse begins at its branch
    last_prompt = (last.history_at, len(run.folds_before(last)), run.cuts_before(last)) if last is not None else None
    unanswered = next((s for s in run.steps if s.n == run.last_step and s.replied is None), None)
    restored = Restored(
        state,
        _open(step, events),
        decisions(events),
        base,
        last_prompt,
        summaries=run.pending_summaries,
        samplings=[x for s in run.steps for x in s.samplings],
        recoveries=[o.action for o in unanswered.overflows] if unanswered is not None else [],
    )
    return restored, window


def _open(step: tuple[Step, ModelReplied] | None, events: Sequence[Event]) -> OpenStep | None:
    if step is None:
        return None
    done, replied = step
    observed = {o.observation.call_id: o for o in done.observed}
    interrupted = {i.call_id: i for i in done.intents if i.call_id not in observed}
    rerun = {
        e.call_id: Decision(e.approved, e.note)
        for e in events
        if isinstance(e, ApprovalGiven) and e.call_id in interrupted and e.seq > interrupted[e.call_id].seq
    }
    compacted = any(c.seq > replied.seq for c in done.compactions)  # an overflow's fold came before the reply
    asked: dict[str, list[str]] = {}
    for question in done.asked:
        asked.setdefault(question.call_id, []).append(question.input_id)
    inner = {o.observation.call_id: o for o in done.inner}
    recovered = Recovered(
        observed,
        interrupted,
        rerun,
        bool(done.notes),
        asked,
        inner=inner,
        inner_interrupted={i.call_id: i for i in done.inner_intents if i.call_id not in inner},
        files={p.call_id: p for p in done.programs},
        tasks={t.call_id: t for t in done.tasks},
    )
    return OpenStep(replied.reply, recovered, compacted)


def _noted(restored: Restored, note: str) -> Restored:
    restored.notes.insert(0, note)
    return restored
