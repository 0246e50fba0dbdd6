"""A placed MCP resource that changed while no process followed it: a run killed after a write to its server and
before the next step took the resource's update is resumed with that update, as the uninterrupted run had it.

Real subprocesses, a real SIGKILL and the crash driver's counter server (its `counter://values` resource placed
before a task made from its prompt, each `put` notifying the resource's followers); the local sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from agent.journal.store import read_events
from agent.recorded.replay import replay
from agent.resume import resume
from core.events import ResourceUpdated
from tests.agent.recovery import crash_driver
from tests.agent.recovery.crash_driver import DIE_AFTER, ROOT, Cell

CELL = Cell.parse("local/append-only/mcp-resource")
STEPS = 3


def updates(run_dir: Path) -> list[tuple[int, str]]:
    return [(e.step, e.message.text) for e in read_events(run_dir) if isinstance(e, ResourceUpdated)]


def test_a_run_killed_before_its_resources_update_was_taken_takes_it_when_resumed(tmp_path):
    reference, _ = crash_driver.run_once(CELL, tmp_path / "reference", STEPS)
    assert [step for step, _ in updates(reference)] == list(range(2, STEPS + 2))  # each put's, at the next step

    out = tmp_path / "killed"
    killed = subprocess.run(  # dies right after the first put is observed: its notice dies with it
        crash_driver.driver("start", str(out), str(STEPS), CELL.name),
        cwd=ROOT,
        env={**os.environ, DIE_AFTER: "tool_observed:1"},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    run_dir = crash_driver._run_dir(out)
    assert run_dir is not None and updates(run_dir) == []

    done = resume(run_dir, model=crash_driver.model(out))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert updates(run_dir) == updates(reference)
    assert crash_driver.problems(run_dir, reference) == []
    played = replay(run_dir, out=tmp_path / "replays")
    assert (played.harness, played.notes, played.replayed_stop) == ([], [], "submitted")
