"""A run whose loop really compacts (the run's own scripted model is the summariser): the
report reads the compaction events, flags the cut-off summariser, diffs the memories,
charges the summariser's tokens and shrinks the prompt breakdown to what was kept."""

from __future__ import annotations

import json

import pytest
from conftest import make_run

from agent.models.pricing import cost_usd, load_prices
from agent.models.scripted import ScriptedCall, ScriptedReply
from core.context_policy import Compact
from core.policy import HarnessPolicy, StopPolicy
from evals.reports.breakdown import breakdowns
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.steps import cut_off, memory_text

MEMORY_1 = {"goal": "count to six", "plan": ["echo each number"], "decisions": ["use echo"]}
MEMORY_2 = {"goal": "count to six", "plan": ["echo five and six", "submit"], "decisions": ["use echo", "one per step"]}


def echo(word: str) -> ScriptedReply:
    return ScriptedReply(
        text=f"Next: {word}.", tool_calls=[ScriptedCall(name="shell", arguments={"command": f"echo {word}"})]
    )


def memory(data: dict, cut_at: int | None = None) -> ScriptedReply:
    text = json.dumps(data)
    return ScriptedReply(text=text[:cut_at], finish_reason="length") if cut_at else ScriptedReply(text=text)


# Compaction every 3 steps, keeping the newest step verbatim; the second summary is cut off once, then retried.
SCRIPT = [
    echo("one"),
    echo("two"),
    echo("three"),
    memory(MEMORY_1),
    echo("four"),
    echo("five"),
    echo("six"),
    memory(MEMORY_2, cut_at=30),
    memory(MEMORY_2),
    ScriptedReply(text="Done.", tool_calls=[ScriptedCall(name="submit", arguments={"answer": "6"})]),
]
POLICY = HarnessPolicy(
    name="compacting",
    stop=StopPolicy(max_steps=20),
    context=[Compact(trigger_tokens=10**9, every_steps=3, keep_recent_steps=1, summariser_prompt="fresh")],
)


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    run_dir = make_run(
        tmp_path_factory.mktemp("compacting"),
        SCRIPT,
        POLICY,
        task_id="count",
        prompt="Echo the numbers one to six, one a step, then submit.",
    )
    return load_run(run_dir, load_prices(), price_model="anthropic:claude-haiku-4-5")


def test_the_report_reads_the_loops_compactions(compacted):
    found = [(s.n, c) for s in compacted.steps for c in s.compactions]
    assert [n for n, _ in found] == [3, 6] and all(c.ok for _, c in found)
    first, second = found[0][1], found[1][1]
    assert not cut_off(first) and cut_off(second) and (second.fold.first_step, second.fold.last_step) == (3, 5)
    assert json.loads(memory_text(second))["plan"] == MEMORY_2["plan"]
    cut = [f for f in compacted.findings if f.detector == "truncated_compaction"]
    assert [f.step for f in cut] == [6] and "retry" in cut[0].detail


def test_the_summarisers_tokens_are_charged_to_the_step_it_followed(compacted):
    step3 = compacted.steps[2]
    own = cost_usd(compacted.price, step3.usage)
    assert compacted.step_costs[2] > own > 0


def test_the_breakdown_swaps_folded_steps_for_the_memory(compacted):
    parts = {b.step: b for b in breakdowns(compacted.opening, compacted.steps, compacted.info.policy)}
    assert parts[3].tokens["summaries"] == 0 and parts[4].tokens["summaries"] > 0


def test_the_page_shows_each_compaction_with_its_memory_diff(compacted):
    html = render_run(compacted).read_text()
    assert html.count('<div class="compaction">') == 2
    assert html.count('class="marker"') == 2 * 4  # both compactions marked on all four charts
    assert '<div class="del">' in html and '<div class="add">' in html  # the plan changed between the memories
    assert "paid for a retry" in html
    assert "⚠ step 6: The summariser was cut off" in html  # the summary's warning, shown as it is
