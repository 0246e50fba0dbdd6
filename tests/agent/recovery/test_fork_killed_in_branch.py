"""A fork whose first process is killed while its branch runs the parent's writes again, then resumed, replays with
no divergence: the branch the resume built is built again in the replay's later life, from the recording.

Real subprocesses and a real SIGKILL (the crash driver's fork cells); the local sandbox, scripted models."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from agent.recorded.replay import replay
from agent.resume import resume
from tests.agent.recovery import crash_driver
from tests.agent.recovery.crash_driver import DIE_AFTER, REBUILD, ROOT

STEPS = 3


@pytest.mark.parametrize("cell", ["local/append-only/code/fork", "local/append-only/shell/fork"])
def test_a_fork_killed_in_its_branch_and_resumed_replays_with_no_divergence(tmp_path, cell):
    """The code cell's parent is forked under calls mode: the replay's branch must play the parent's programs back
    with the parent's run_code in whichever life builds it, as the first life does."""
    out = tmp_path / "killed"
    killed = subprocess.run(
        crash_driver.driver("start", str(out), str(STEPS), cell),
        cwd=ROOT,
        env={**os.environ, DIE_AFTER: f"{REBUILD}:1"},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    run_dir = crash_driver._run_dir(out)
    assert run_dir is not None
    done = resume(run_dir, model=crash_driver.model(out))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert crash_driver.kills_in_branches(run_dir) == 1
    assert crash_driver.counter(run_dir) == list(range(1, STEPS + 1))

    played = replay(run_dir, out=tmp_path / "replays")
    assert played.harness == [] and played.notes == []
    assert (played.recorded_stop, played.replayed_stop) == ("submitted", "submitted")
