"""Knowledge-update probes: the world changes under the agent and compaction folds in the middle; after each
fold the prompt must show the value the agent noted last as current and no older one as current. With the
agent's memory on this holds for every compaction preset; benchmarks/bench_memory_probes.py counts the
failures with it off, side by side."""

from __future__ import annotations

import pytest

from core.context_policy import Compact
from core.memory_types import Fact, Superseded, WorkingMemory, memory_text
from core.presets import PRESETS
from core.types import Message
from evals.probes.check import check_fold, statuses
from evals.probes.knowledge import PROBES
from evals.probes.run import run_probe

COMPACTING = [p for p in PRESETS.values() if any(isinstance(s, Compact) for s in p.context)]


@pytest.mark.parametrize("policy", COMPACTING, ids=[p.name for p in COMPACTING])
def test_with_the_memory_on_every_fold_shows_the_latest_value_and_no_superseded_one_as_current(tmp_path, policy):
    for probe in PROBES:
        result = run_probe(probe, policy, memory=True, out=tmp_path)
        assert len(result.folds) >= 2, (probe.name, result.folds)  # folds before and after the world changed
        assert result.ok, (probe.name, [f for f in result.folds if not f.ok])
        assert any(f.marked for f in result.folds)  # the older value is in the prompt, marked superseded


def user(text: str) -> Message:
    return Message(role="user", text=text)


def test_a_later_note_decides_and_a_superseded_line_is_not_current():
    old = WorkingMemory(facts=[Fact(about="cat config.ini", value="timeout = 30", at_step=1)])
    new = WorkingMemory(
        facts=[Fact(about="cat config.ini", value="timeout = 75", at_step=4, supersedes="timeout = 30")],
        superseded=[
            Superseded(about="cat config.ini", value="timeout = 30", from_step=1, until_step=4, by="timeout = 75")
        ],
    )
    prompt = [user("task"), user(memory_text(old, 1)), user(memory_text(new, 2)), user("timeout = 30 (a raw step)")]
    assert statuses(prompt, ["timeout = 30", "timeout = 75"]) == {
        "timeout = 30": "superseded",
        "timeout = 75": "current",
    }
    stale = check_fold(6, prompt[:2], "timeout = 75", ["timeout = 30"])
    assert not stale.ok and stale.stale == ["timeout = 30"] and not stale.latest_shown
    assert check_fold(6, prompt, "timeout = 75", ["timeout = 30"]).ok
