"""kill -9 at random moments, then resume until done: no step lost, no write applied twice.

Real subprocesses, real SIGKILL, real files. The run appends 1..STEPS to a counter
file with a slow write tool (so many kills land while it runs) that tags each line
with its idempotency key; its `already_done` check settles an interrupted append.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from agent.events import ModelReplied, RunResumed, ToolObserved
from agent.journal import read_events
from tests.agent import crash_driver
from tests.agent.helpers import events as raw_events

STEPS = 8
KILLS = 20


def history(run_dir):
    """The conversation as the journal records it: what the model saw, in order."""
    out = []
    for e in raw_events(run_dir):
        if e["type"] == "message":
            out.append(e["message"])
        elif e["type"] == "model_replied":
            out.append(e["reply"]["message"])
        elif e["type"] == "tool_observed":
            out.append({k: e["observation"][k] for k in ("call_id", "tool", "status", "text")})
    return out


def prompts(out):
    return [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]


def test_sigkill_at_random_moments_then_resume_matches_the_uninterrupted_run(tmp_path):
    crash_driver.start(tmp_path / "reference", STEPS)
    [reference] = (tmp_path / "reference" / "runs").iterdir()
    want_counter = (reference / "workspace" / "counter.txt").read_text()
    want_history = history(reference)
    want_prompts = {p["index"]: p["prompt"] for p in prompts(tmp_path / "reference")}
    want_steps = json.loads((reference / "summary.json").read_text())["steps"]
    assert want_counter.split()[::2] == [str(i) for i in range(1, STEPS + 1)]

    seed = int(os.environ.get("CRASH_SEED", time.time_ns() % 2**32))
    stats = crash_driver.torture(tmp_path / "killed", KILLS, STEPS, seed, window_s=0.8)
    assert stats.kills == KILLS, f"seed {seed}"

    inside_tool = 0
    for run_dir in stats.runs:
        why = f"seed {seed}, {run_dir}"
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["stop_reason"] == "submitted" and summary["steps"] == want_steps, why
        assert (run_dir / "workspace" / "counter.txt").read_text() == want_counter, why  # none lost, none twice
        assert history(run_dir) == want_history, why
        events = read_events(run_dir)
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), why
        observed = Counter(e.observation.call_id for e in events if isinstance(e, ToolObserved))
        assert set(observed.values()) == {1}, why
        assert sum(isinstance(e, ModelReplied) for e in events) == want_steps, why  # the model never re-asked a journaled step
        logged = prompts(run_dir.parent.parent)
        assert {p["index"] for p in logged} == set(want_prompts), why
        assert all(p["prompt"] == want_prompts[p["index"]] for p in logged), why  # byte-identical prompts
        inside_tool += sum("was running when the process died" in n for e in events if isinstance(e, RunResumed) for n in e.notes)
    assert inside_tool > 0, f"seed {seed}: no kill landed inside a tool; the test lost its point"
