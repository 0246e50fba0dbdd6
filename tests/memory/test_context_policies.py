"""Reasoning stripping and observation masking, on histories built from real messages."""

from __future__ import annotations

from core.context_policy import MaskObservations, StripReasoning
from core.types import Message
from memory.render import Renderer, render
from tests.memory.helpers import SYSTEM, TASK, history, step

SIGNED = [{"type": "thinking", "thinking": "...", "signature": "sig"}]


def with_reasoning(n: int) -> list[Message]:
    out = [SYSTEM, TASK]
    for i in range(1, n + 1):
        out += step(i, reasoning=f"thought {i}", payload=SIGNED)
    return out


def reasoning_of(messages):
    return [m.reasoning for m in messages if m.role == "assistant"]


def test_all_keeps_every_reasoning_block():
    h = with_reasoning(3)
    assert render(h, [StripReasoning(keep="all")]) == h


def test_last_turn_keeps_only_the_newest_turn_and_its_signed_blocks_while_unfinished():
    out = reasoning_of(render(with_reasoning(3), [StripReasoning(keep="last_turn")]))
    assert out[:2] == [None, None]
    assert out[2].text == "thought 3" and out[2].payload == SIGNED


def test_none_strips_text_but_keeps_the_signed_blocks_of_an_unfinished_tool_turn():
    out = reasoning_of(render(with_reasoning(3), [StripReasoning(keep="none")]))
    assert out[:2] == [None, None]
    assert out[2].text == "" and out[2].payload == SIGNED  # the provider rejects the request without them


def test_a_finished_turn_loses_its_signed_blocks():
    # The newest assistant turn answered without a tool call: its tool-use turn is over.
    h = with_reasoning(2) + [Message(role="assistant", text="done", reasoning=None)]
    out = reasoning_of(render(h, [StripReasoning(keep="none")]))
    assert out == [None, None, None]
    h = with_reasoning(2) + [Message(role="assistant", text="done")] + [Message(role="user", text="go on")]
    h[-2] = h[-2].model_copy(update={"reasoning": with_reasoning(1)[2].reasoning})
    out = reasoning_of(render(h, [StripReasoning(keep="last_turn")]))
    assert out[-1].text == "thought 1" and out[-1].payload == []


def test_masking_keeps_the_last_n_verbatim_and_says_what_the_others_were():
    h = history(4, output="line\n" * 10)
    h[3] = h[3].model_copy(update={"status": "error"})
    out = render(h, [MaskObservations(keep_last=2)])
    tools = [m for m in out if m.role == "tool"]
    assert [m.text for m in tools[2:]] == ["line\n" * 10] * 2
    assert tools[0].text == "[output of shell hidden to save context: 50 characters, 11 lines, status error]"
    assert "status ok" in tools[1].text
    assert len(out) == len(h) and [m.role for m in out] == [m.role for m in h]


def test_policies_apply_in_order_and_leave_the_history_alone():
    h = with_reasoning(6)
    before = [m.model_dump() for m in h]
    out = render(h, [StripReasoning(keep="none"), MaskObservations(keep_last=1)])
    assert [m.model_dump() for m in h] == before
    assert sum(m.role == "tool" and m.text.startswith("[output of") for m in out) == 5


def test_batched_masking_moves_the_boundary_in_jumps_and_is_append_only_in_between():
    h = history(30, output="out\n" * 20)
    bounds = [i for i, m in enumerate(h) if m.role == "assistant"] + [len(h)]
    step = MaskObservations(keep_last=3, every=10)
    renderer = Renderer([step])
    prompts = [renderer.render(h[:b]) for b in bounds]
    masked = [sum(m.text.startswith("[output of") for m in p) for p in prompts]
    assert set(masked) == {0, 10, 20} and masked == sorted(masked)
    for a, b, na, nb in zip(prompts, prompts[1:], masked, masked[1:]):
        if na == nb:
            assert b[: len(a)] == a  # no jump: the earlier prompt is a prefix of the next


def test_rewritten_messages_are_made_once_per_run_and_keep_their_identity():
    """Re-rendering a long history must not re-copy every masked or stripped message each step."""
    h = history(12, reasoning="thinking")
    renderer = Renderer([StripReasoning(keep="none"), MaskObservations(keep_last=2)])
    first, second = renderer.render(h), renderer.render(h + step(13, reasoning="more"))
    rewritten = [i for i, (a, b) in enumerate(zip(first, h)) if a is not b]
    assert len(rewritten) > 12  # reasoning stripped from every turn, old outputs masked
    assert all(second[i] is first[i] for i in rewritten)  # the rewrites are reused, not remade
