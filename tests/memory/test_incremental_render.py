"""Property: one run's renderer, which rewrites only what changed since its last prompt, renders
exactly what the context steps define, for arbitrary histories, folds and every preset.

The definitions below are the steps as plain functions of the whole history (what the
README says each does); the renderer under test is driven the way the loop, resume and
re-render drive it: the same growing history list, sometimes a shorter slice of it, and
folds added as compaction makes them.
"""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.context_policy import Compact, DiscloseTools, MaskObservations, StripReasoning
from core.memory_types import Fold, WorkingMemory
from core.presets import PRESETS
from core.types import Message, Observation, Reasoning, ToolCall
from memory.context import placeholder
from memory.folds import render_folds
from memory.render import Renderer
from tests.memory.helpers import SYSTEM, TASK


def strip_defined(messages: list[Message], step: StripReasoning) -> list[Message]:
    if step.keep == "all":
        return messages
    newest = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    out = []
    for i, m in enumerate(messages):
        if m.reasoning is None:
            out.append(m)
            continue
        text = m.reasoning.text if step.keep == "last_turn" and i == newest else ""
        payload = m.reasoning.payload if i == newest and m.tool_calls else []
        reasoning = m.reasoning.model_copy(update={"text": text, "payload": payload}) if text or payload else None
        out.append(m.model_copy(update={"reasoning": reasoning}))
    return out


def mask_defined(messages: list[Message], step: MaskObservations) -> list[Message]:
    tools = [i for i, m in enumerate(messages) if m.role == "tool"]
    over = max(0, len(tools) - step.keep_last)
    hide = set(tools[: over - over % step.every])
    return [m.model_copy(update={"text": placeholder(m)}) if i in hide else m for i, m in enumerate(messages)]


def defined(history: list[Message], steps, folds: list[Fold]) -> list[Message]:
    """Each step in order; folds go first where no Compact step places them (an overflow recovery folds under
    any policy)."""
    messages = list(history) if any(isinstance(s, Compact) for s in steps) else render_folds(list(history), folds)
    for step in steps:
        if isinstance(step, StripReasoning):
            messages = strip_defined(messages, step)
        elif isinstance(step, MaskObservations):
            messages = mask_defined(messages, step)
        elif isinstance(step, Compact):
            messages = render_folds(messages, folds)
    return messages


def as_json(messages) -> str:
    return json.dumps([m.model_dump(mode="json") for m in messages])


op = st.one_of(
    st.tuples(st.just("step"), st.none() | st.text(max_size=8), st.booleans(), st.text(max_size=12)),
    st.tuples(st.just("assistant"), st.booleans(), st.none() | st.text(max_size=8), st.booleans()),
    st.tuples(st.just("tool"), st.text(max_size=12), st.sampled_from(["ok", "error", "timeout"])),
    st.tuples(st.just("user"), st.text(max_size=8)),
    st.tuples(st.just("fold"), st.booleans(), st.booleans()),  # restart, with the agent's memory
    st.tuples(st.just("render"), st.none() | st.floats(0, 1)),
)
other_steps = st.lists(
    st.one_of(
        st.builds(StripReasoning, keep=st.sampled_from(["none", "last_turn", "all"])),
        st.builds(MaskObservations, keep_last=st.integers(0, 4), every=st.integers(1, 3)),
        st.just(DiscloseTools()),
    ),
    max_size=3,
)
# Compaction works on history indices, so it comes first (core.context_policy says so).
policies = st.one_of(
    st.sampled_from([p.context for p in PRESETS.values()]),
    other_steps.map(lambda steps: [Compact(), *steps]),
    other_steps,
)


def message(kind, args, n: int) -> Message:
    if kind == "assistant":
        calls, thought, signed = args
        reasoning = (
            Reasoning(text=thought or "", payload=[{"sig": str(n)}] if signed else [])
            if thought is not None or signed
            else None
        )
        tool_calls = (ToolCall(id=f"c{n}", name="shell", arguments="{}"),) if calls else ()
        return Message(role="assistant", text=f"turn {n}", tool_calls=tool_calls, reasoning=reasoning)
    if kind == "tool":
        text, status = args
        return Observation(call_id=f"c{n}", tool="shell", status=status, text=text).to_message()
    return Message(role="user", text=args[0])


@settings(max_examples=500, deadline=None)
@given(policies, st.lists(op, max_size=60))
# Folds made, then an earlier prompt without them (as a resume renders the last prompt sent).
@example(
    [Compact(), MaskObservations(keep_last=1)],
    [("step", None, False, "x")] * 6 + [("fold", False, True), ("render", None), ("render", 0.2)],
)
def test_the_incremental_renderer_renders_what_the_steps_define(steps, ops):
    renderer = Renderer(steps)
    history = [SYSTEM, TASK]  # one list, appended to in place, as the loop's state.history is
    folds: list[Fold] = []
    for n, (kind, *args) in enumerate(ops):
        if kind == "fold":
            starts = [
                i for i, m in enumerate(history) if m.role == "assistant" and i > (folds[-1].upto if folds else 0)
            ]
            if starts:
                folds.append(
                    Fold(
                        version=len(folds) + 1,
                        upto=starts[-1],
                        first_step=1,
                        last_step=1,
                        memory=WorkingMemory(),
                        text=f"memory v{len(folds) + 1}",
                        restart=args[0],
                        memory_text=f"[Memory as of step {n}]" if args[1] else None,
                    )
                )
        elif kind == "render":
            if args[0] is None:
                shown, made = history, folds
            else:  # an earlier prompt again, as a resume renders the last prompt the crashed process sent
                shown = history[: 2 + round(args[0] * (len(history) - 2))]
                made = [f for f in folds if f.upto <= len(shown)]
            assert as_json(renderer.render(shown, made)) == as_json(defined(shown, steps, made))
        elif kind == "step":  # a whole step: a turn with a tool call and its result
            thought, signed, output = args
            history += [message("assistant", (True, thought, signed), n), message("tool", (output, "ok"), n)]
        else:
            history.append(message(kind, args, n))
    assert as_json(renderer.render(history, folds)) == as_json(defined(history, steps, folds))
