"""kill -9 at random moments, then resume until done: no step lost, no write applied twice.

Real subprocesses, real SIGKILL, real files. The run appends 1..STEPS to a counter
file with a slow write tool (so most kills land while it runs) that tags each line
with its idempotency key; its `already_done` check settles an interrupted append.
Every finished run must equal the uninterrupted one: counter file, conversation,
and every prompt sent to the model, byte for byte (see crash_driver.problems).
"""

from __future__ import annotations

import os
import time

from tests.agent import crash_driver

STEPS = 8
KILLS = 20


def test_sigkill_at_random_moments_then_resume_matches_the_uninterrupted_run(tmp_path):
    crash_driver.start(tmp_path / "reference", STEPS)
    [reference] = (tmp_path / "reference" / "runs").iterdir()
    assert (reference / "workspace" / "counter.txt").read_text().split()[::2] == [str(i) for i in range(1, STEPS + 1)]

    seed = int(os.environ.get("CRASH_SEED", time.time_ns() % 2**32))  # a failure names its seed; CRASH_SEED repeats its kill delays
    stats = crash_driver.torture(tmp_path / "killed", KILLS, STEPS, seed, window_s=0.8)
    assert stats.kills == KILLS and stats.runs, f"seed {seed}"
    for run_dir in stats.runs:
        assert crash_driver.problems(run_dir, reference) == [], f"seed {seed}, {run_dir}"
    assert sum(crash_driver.kills_inside_tools(r) for r in stats.runs) > 0, f"seed {seed}: no kill landed inside a tool"
