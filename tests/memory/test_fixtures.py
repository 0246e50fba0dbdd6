"""The recorded trajectories the context benchmarks replay (made by benchmarks/make_trajectories.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.journal.store import read_events, read_run_info
from agent.journal.summary import summarize

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "trajectories"
RUNS = sorted(p for p in FIXTURES.iterdir() if (p / "events.jsonl").exists())


def test_there_are_at_least_three():
    assert len(RUNS) >= 3


@pytest.mark.parametrize("run_dir", RUNS, ids=[p.name for p in RUNS])
def test_a_long_real_trajectory_small_enough_for_the_repo(run_dir):
    assert (run_dir / "events.jsonl").stat().st_size < 400_000
    events = read_events(run_dir, on_bad_line=lambda n, e: pytest.fail(f"line {n}: {e}"))
    summary = summarize(events, read_run_info(run_dir), 0.0)
    assert summary.steps >= 60 and summary.stop_reason == "submitted"
    assert {"read_file", "grep", "shell", "replace"} <= set(summary.tool_calls)
    texts = [e.observation.text for e in events if e.type == "tool_observed"]
    assert any("FAILED test_issue.py" in t for t in texts)  # a real pytest failure
    assert any(" passed" in t and "failed" not in t for t in texts[-3:])  # and the fix passing
    assert summary.truncated_outputs >= 10  # large reads, cut head+tail by the dispatcher
    assert summary.errors.get("nonzero_exit", 0) >= 1 and summary.errors.get("tool_error", 0) >= 1
