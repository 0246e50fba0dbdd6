"""Long, costly runs hold: 150 scripted steps whose outputs reach 50,000 tokens, in a 32,000-token window.

Overflow recovery (agent/overflow.py) keeps every prompt inside the window, under both recoveries,
and the run submits: no model error, no harness error, no `context_exhausted`. An output larger than
the whole window is cut when it is made, its full text kept in artifacts/. Played back, the run
builds every prompt, observation and recovery again byte for byte (agent.recorded.replay).
"""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.session import RunSpec, start
from agent.tokens import counter_for
from tests.agent.costly_run import costly_run, policy
from tests.agent.helpers import events

pytestmark = pytest.mark.slow

WINDOW = 32000
STEPS = 150


@pytest.mark.parametrize("on_overflow", ["compact", "truncate"])
def test_a_150_step_run_with_outputs_larger_than_the_window_submits_and_replays(tmp_path, on_overflow):
    made = costly_run(seed=0, steps=STEPS)
    model = ScriptedModel(made.replies)
    ran = policy(WINDOW, on_overflow, steps=STEPS)
    summary, run_dir = start(RunSpec(made.task, model, ran, tmp_path / "runs"))
    assert (summary.stop_reason, summary.steps) == ("submitted", STEPS), summary.message
    journal = events(run_dir)
    assert not [e for e in journal if e["type"] == "model_failed"]
    assert [e["reason"] for e in journal if e["type"] == "run_stopped"] == ["submitted"]

    replied = [e for e in journal if e["type"] == "model_replied"]
    assert all(e["counted_tokens"] + ran.model.max_tokens <= WINDOW for e in replied)
    overflows = [e for e in journal if e["type"] == "context_overflow"]
    assert {e["action"] for e in overflows} == {on_overflow}  # at 32k an emergency fold always makes room
    assert summary.overflow_recoveries == len(overflows)
    assert summary.overflow_dropped_tokens == sum(e["tokens"] - e["tokens_after"] for e in overflows) > 0

    counter = counter_for(model)
    cut = [e["observation"] for e in journal if e["type"] == "tool_observed" and e["observation"]["truncation"]]
    full = [(run_dir / o["truncation"]["artifact"]).read_text() for o in cut]
    assert max(len(counter.text_ids(text)) for text in full) > WINDOW  # made larger than the window, cut at dispatch
    assert all(len(counter.text_ids(o["text"])) < WINDOW // 2 for o in cut)

    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [], "\n".join(d.what + "\n" + d.diff for d in report.harness[:3])
    assert (report.prompts, report.replayed_stop) == (STEPS, "submitted")
