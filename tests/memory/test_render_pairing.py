"""Property: whatever the history, the folds compaction made of it and the context steps, the rendered prompt opens
with the system message, and every tool call in it is answered by its result before the next turn, and every tool
result answers a call of the turn before it: a provider refuses a prompt with an unanswered call or an orphan result."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models.scripted import ScriptedModel, ScriptedReply
from core.context_policy import Compact, MaskObservations, StripReasoning
from core.memory_types import WorkingMemory
from core.policy import ModelParams
from core.presets import PRESETS
from core.types import Message, Observation, Reasoning, ToolCall
from memory.compaction import compact
from memory.render import Renderer
from memory.summariser import ModelSummariser
from memory.tokens import TokenCounter
from tests.memory.helpers import SYSTEM, TASK

COUNTER = TokenCounter(lambda text: list(text.encode()), "bytes")

# A turn: its tool calls (none: a reply in words), its reasoning, and a user message after it (a nudge, a note).
turns = st.lists(
    st.tuples(st.integers(0, 3), st.none() | st.text(max_size=6), st.none() | st.text(max_size=6)),
    min_size=1,
    max_size=14,
)
compacts = st.builds(
    Compact,
    every_steps=st.integers(1, 4),
    keep_recent_steps=st.integers(0, 3),
    keep_first_tokens=st.integers(0, 400),
    layout=st.sampled_from(["append", "rewrite"]),
    trigger_tokens=st.just(10**9),
)
others = st.lists(
    st.one_of(
        st.builds(StripReasoning, keep=st.sampled_from(["none", "last_turn", "all"])),
        st.builds(MaskObservations, keep_last=st.integers(0, 3), every=st.integers(1, 3)),
    ),
    max_size=2,
)
policies = st.one_of(
    st.sampled_from([p.context for p in PRESETS.values()]),
    st.tuples(compacts, others).map(lambda p: [p[0], *p[1]]),
    others,
)


def turn(n: int, calls: int, thought: str | None, nudge: str | None) -> list[Message]:
    tool_calls = tuple(ToolCall(id=f"c{n}_{j}", name="shell", arguments="{}") for j in range(calls))
    reasoning = Reasoning(text=thought, payload=[{"sig": str(n)}]) if thought is not None else None
    out = [Message(role="assistant", text=f"turn {n}", tool_calls=tool_calls, reasoning=reasoning)]
    out += [Observation(call_id=c.id, tool=c.name, status="ok", text=f"out {c.id}").to_message() for c in tool_calls]
    return out + ([Message(role="user", text=nudge)] if nudge is not None else [])


def assert_paired(prompt: list[Message]) -> None:
    assert prompt[0].role == "system" and all(m.role != "system" for m in prompt[1:])
    open_calls: list[str] = []  # the calls of the last turn not answered yet
    for m in prompt:
        if m.role == "tool":
            assert open_calls and m.tool_call_id == open_calls[0], "a tool result that answers no open call"
            open_calls.pop(0)
        else:
            assert not open_calls, f"calls {open_calls} left unanswered before a {m.role} message"
            if m.role == "assistant":
                open_calls = [c.id for c in m.tool_calls]
    assert not open_calls


@settings(max_examples=150, deadline=None)
@given(turns, policies, st.data())
def test_every_call_keeps_its_result_and_no_result_is_orphaned(spec, steps, data):
    summaries = ScriptedModel([ScriptedReply(text=json.dumps(WorkingMemory(goal="g").model_dump()))] * 60)
    summariser = ModelSummariser(summaries, ModelParams())
    cfg = next((s for s in steps if isinstance(s, Compact)), None)
    renderer = Renderer(steps, COUNTER)
    history, folds = [SYSTEM, TASK], []
    for n, (calls, thought, nudge) in enumerate(spec, 1):
        history += turn(n, calls, thought, nudge)
        prompt = renderer.render(history, folds)
        assert_paired(prompt)
        if cfg is not None and data.draw(st.booleans()):
            made = compact(history, folds, cfg, prompt, COUNTER, summariser, "every_steps").fold
            if made is not None:
                folds.append(made)
                assert_paired(renderer.render(history, folds))
