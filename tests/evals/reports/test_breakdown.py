"""The per-turn prompt breakdown: parts add up to the reported prompt, masking comes off the
observations, and a compaction replaces the steps it folded with its summary."""

from __future__ import annotations

from crafted import act, compaction

from core.types import Message
from evals.reports.breakdown import breakdowns, reasoning_kept
from evals.reports.steps import steps_of

OPENING = [Message(role="system", text="s" * 400), Message(role="user", text="t" * 800)]


def by_step(events, compactions=(), policy=None):
    return {b.step: b for b in breakdowns(OPENING, steps_of([*events, *compactions]), policy or {})}


def test_parts_add_up_to_the_reported_prompt_and_observations_grow():
    events = [
        e for i in range(1, 5) for e in act(i, "shell", {"command": f"cat f{i}"}, "o" * 2000, prompt=1000 + 600 * i)
    ]
    parts = by_step(events)
    for b in parts.values():
        assert b.total == b.reported
        assert b.tokens["system"] == 100 and b.tokens["task"] == 200
    assert [parts[n].tokens["observations"] for n in (1, 2, 3, 4)] == [0, 500, 1000, 1500]


def test_without_reported_tokens_the_estimate_stands_alone():
    events = [e for i in range(1, 3) for e in act(i, "shell", {"command": "ls"}, "o" * 400, prompt=0)]
    b = by_step(events)[2]
    assert b.reported == 0 and b.tokens["schemas"] == 0 and b.tokens["observations"] == 100


def test_text_the_policy_removed_comes_off_the_observations():
    events = [e for i in range(1, 4) for e in act(i, "shell", {"command": "ls"}, "o" * 4000, prompt=5000)]
    steps = steps_of(events)
    # step 3 saw only one of the two earlier outputs
    steps[2].replied = steps[2].replied.model_copy(update={"prompt_chars": 400 + 800 + 4000 + 40})
    b = {x.step: x for x in breakdowns(OPENING, steps, {})}[3]
    assert b.tokens["observations"] < 1100


def test_a_compaction_swaps_the_steps_it_folded_for_its_summary():
    events = [e for i in range(1, 6) for e in act(i, "shell", {"command": f"cat f{i}"}, "o" * 2000, prompt=20000)]
    folded = compaction(3, folded=(1, 3), text="m" * 800, restart=True, memory={"goal": "x"})
    parts = by_step(events, [folded])
    assert parts[4].tokens["summaries"] == 200 and parts[3].tokens["summaries"] == 0
    assert parts[4].tokens["observations"] == 0  # steps 1-3 are folded, and step 4 has not run yet
    assert parts[5].tokens["observations"] == 500


def test_how_much_reasoning_a_policy_resends():
    assert reasoning_kept({}) == "all"
    assert reasoning_kept({"context": [{"kind": "strip_reasoning", "keep": "none"}]}) == "none"
    assert reasoning_kept({"context": [{"kind": "mask_observations", "keep_last": 3}]}) == "all"
