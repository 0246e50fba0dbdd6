"""The one step fold: for any journal the loop can write, the history it rebuilds is every message-carrying
event in order, each step's reply sits at its `history_at`, and no event of a step is lost or moved."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.journal.fold import fold, worked_s
from core.events import (
    ApprovalGiven,
    Compacted,
    Forked,
    MessageAdded,
    ModelFailed,
    ModelReplied,
    RunResumed,
    RunStopped,
    SandboxOpened,
    SummaryReplied,
    ToolIntent,
    ToolObserved,
)
from core.memory_types import Fold, WorkingMemory
from core.types import Message, ModelReply, Observation, ToolCall, Usage

OPENING = [
    MessageAdded(step=0, message=Message(role="system", text="s")),
    MessageAdded(step=0, message=Message(role="user", text="t")),
]


def step_events(n: int, calls: int, failures: int, nudged: bool, compacted: bool) -> list:
    """One step as the loop journals it: failed attempts, the reply, intents and results, a nudge, a compaction."""
    out: list = [ModelFailed(step=n, transient=True, message=f"e{i}") for i in range(failures)]
    tool_calls = tuple(ToolCall(id=f"c{n}_{i}", name="shell", arguments="{}") for i in range(calls))
    out.append(
        ModelReplied(
            step=n,
            reply=ModelReply(
                message=Message(role="assistant", text=f"r{n}", tool_calls=tool_calls),
                usage=Usage(prompt_tokens=n),
                finish_reason="stop",
            ),
            prompt_messages=0,
            prompt_chars=0,
        )
    )
    for c in tool_calls:
        out.append(ToolIntent(step=n, call_id=c.id, tool="shell", arguments={}, idempotency_key=c.id))
        out.append(ToolObserved(step=n, observation=Observation(call_id=c.id, tool="shell", status="ok", text=c.id)))
    if nudged:
        out.append(MessageAdded(step=n, message=Message(role="user", text=f"nudge {n}")))
    if compacted:
        fold_ = Fold(
            version=1, upto=2, first_step=1, last_step=n, memory=WorkingMemory(), text="m", restart=True, at_step=n
        )
        out.append(
            Compacted(
                step=n,
                ok=True,
                trigger="tokens",
                version=1,
                tokens_before=2,
                tokens_after=1,
                fold=fold_,
                summariser_usage=Usage(),
                finish_reason="stop",
                cut_off=False,
            )
        )
    return out


STEP = st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans(), st.booleans())


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=8), st.booleans())
def test_the_fold_keeps_every_event_in_its_place(shapes, stopped):
    events = list(OPENING)
    for n, shape in enumerate(shapes, 1):
        events += step_events(n, *shape)
    if stopped:
        events.append(RunStopped(step=len(shapes), reason="submitted"))
    events = [e.model_copy(update={"seq": i}) for i, e in enumerate(events, 1)]

    run = fold(events)
    carried = [e for e in events if isinstance(e, (MessageAdded, ModelReplied, ToolObserved))]
    assert run.seqs == [e.seq for e in carried] and len(run.history) == len(carried)
    assert run.opening == [e.message for e in OPENING]
    assert [s.n for s in run.replies] == list(range(1, len(shapes) + 1))
    for step, (calls, failures, nudged, compacted) in zip(run.replies, shapes, strict=True):
        assert run.history[step.history_at] == step.reply.message
        assert [o.call_id for o in step.observations] == [c.id for c in step.calls] and len(step.intents) == calls
        assert len(step.failures) == failures and len(step.notes) == nudged and len(step.compactions) == compacted
        assert len(run.folds_before(step)) == sum(c for *_, c in shapes[: step.n - 1])
    assert (run.stop is not None) == stopped


def summariser_calls(n: int, given: list[bool]) -> list:
    """A compaction's summariser calls as the journal holds them: each gave a reply, or raised."""
    reply = ModelReply(message=Message(role="assistant", text="{}"), usage=Usage(), finish_reason="stop")
    return [
        SummaryReplied(
            step=n,
            request_sha256="x",
            request_messages=2,
            cap=10,
            **({"reply": reply} if ok else {"error": "TransientModelError: busy"}),
        )
        for ok in given
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(STEP, st.lists(st.booleans(), max_size=3)), min_size=1, max_size=6), st.booleans())
def test_the_fold_counts_the_models_replies_and_the_compaction_a_crash_cut_short(shapes, resumed):
    events = list(OPENING)
    for n, ((calls, failures, nudged, compacted), given_) in enumerate(shapes, 1):
        steps = step_events(n, calls, failures, nudged, compacted)
        events += (
            steps[:-1] + summariser_calls(n, given_) + steps[-1:] if compacted else steps + summariser_calls(n, given_)
        )
    if resumed:
        events.append(RunResumed(step=len(shapes) + 5, from_seq=0))
    events = [e.model_copy(update={"seq": i, "ts": float(i)}) for i, e in enumerate(events, 1)]

    run = fold(events)
    # What a scripted model has handed out: one per reply, the agent's or the summariser's; a call that raised took none.
    assert run.model_replies == sum(
        isinstance(e, ModelReplied) or (isinstance(e, SummaryReplied) and e.reply is not None) for e in events
    )
    last_compaction = max((e.seq for e in events if isinstance(e, Compacted)), default=0)
    assert run.pending_summaries == [e for e in events if isinstance(e, SummaryReplied) and e.seq > last_compaction]
    for step in run.steps:
        mine = [e for e in events if e.step == step.n and not isinstance(e, RunResumed)]
        assert step.summaries == [e for e in mine if isinstance(e, SummaryReplied)]
        assert step.last_seq == max(e.seq for e in mine)
    assert run.last_step == max(e.step for e in events)
    assert run.worked_ts == max(e.ts for e in events if not isinstance(e, RunResumed))


TAKEN_UP = st.sampled_from(
    [
        ApprovalGiven(step=1, call_id="c1_0", approved=True),
        SandboxOpened(step=0, container_id="c", how="reconnected"),
        RunResumed(step=1, from_seq=0),
        Forked(step=1, parent="p", parent_dir="p", inherited=2, world="w", world_sha256="s", reshaped=False),
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), TAKEN_UP, st.floats(0, 10**6)), max_size=5), st.integers(0, 12))
def test_the_time_a_run_worked_leaves_out_every_wait_before_it_was_taken_up_again(lives, after_seq):
    """A second from each event of a step to the one before it; however long the run waited before a person
    decided or a process took it up again, the wait is not work; the run's first container starting is. From a
    snapshot on, only the work after it."""
    started = SandboxOpened(step=0, container_id="c", ts=2.0)  # a second after the opening: work
    events, work, ts = [*OPENING, started], [len(OPENING) + 1], 2.0
    for n, (calls, taken_up, wait) in enumerate(lives, 1):
        ts += wait
        events.append(taken_up.model_copy(update={"ts": ts}))
        for e in step_events(n, calls, 0, False, False):
            ts += 1.0
            events.append(e.model_copy(update={"ts": ts}))
            work.append(len(events))  # the seq it gets: one second of work since the event before
    events = [e.model_copy(update={"seq": i, "ts": e.ts or 1.0}) for i, e in enumerate(events, 1)]
    assert worked_s(events, after_seq) == pytest.approx(sum(1.0 for seq in work if seq > after_seq))
