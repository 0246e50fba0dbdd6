"""kill -9 at random moments, then resume until done: no step lost, no write applied twice.

Real subprocesses, real SIGKILL, real files. The run writes 1..STEPS to a counter file
with idempotent, slow shell commands (so many kills land while one runs, and it runs
again on resume). Every finished run must equal the uninterrupted one: counter,
conversation, and every prompt sent to the model, byte for byte (see crash_driver.problems).
test_crash_matrix.py does the same for every sandbox, context policy and kind of write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.store import read_events
from cli.main import app
from core.events import ModelReplied, ToolObserved
from tests.agent.recovery import crash_driver

STEPS = 6
KILLS = 12
CELL = crash_driver.Cell("local", "append-only", "shell")
runner = CliRunner()


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_matches_the_uninterrupted_run(tmp_path):
    reference, took = crash_driver.run_once(CELL, tmp_path / "reference", STEPS)
    assert crash_driver.counter(reference) == list(range(1, STEPS + 1))

    seed = int(
        os.environ.get("CRASH_SEED", time.time_ns() % 2**32)
    )  # a failure names its seed; CRASH_SEED repeats its kill delays
    stats = crash_driver.torture(tmp_path / "killed", CELL, KILLS, STEPS, seed, window_s=took)
    assert stats.kills == KILLS and stats.runs, f"seed {seed}"
    for run_dir in stats.runs:
        assert crash_driver.problems(run_dir, reference) == [], f"seed {seed}, {run_dir}"
    assert sum(crash_driver.kills_inside_tools(r) for r in stats.runs) > 0, (
        f"seed {seed}: no kill landed inside a write"
    )


def test_harness_resume_picks_up_a_harness_run_killed_inside_a_shell_command(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: write_file, arguments: {path: a.txt, content: A}}]\n"
        "- tool_calls: [{name: shell, arguments: {command: 'sleep 3'}}]\n"
        "- tool_calls: [{name: write_file, arguments: {path: c.txt, content: C}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    harness = Path(sys.executable).parent / "harness"
    proc = subprocess.Popen(
        [
            str(harness),
            "run",
            "--task",
            "Write a and c.",
            "--model",
            f"scripted:{script}",
            "--out",
            str(tmp_path / "runs"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        run_dir = wait_for(lambda: next((d for d in (tmp_path / "runs").glob("*") if intent_of(d, "call_2_0")), None))
        busy = runner.invoke(app, ["resume", str(run_dir)])
        assert busy.exit_code == 2 and "is in use" in busy.output  # never two writers on one journal
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    resumed = runner.invoke(app, ["resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert "call_2_0 (shell) was running when its process stopped" in " ".join(resumed.output.split())
    events = read_events(run_dir)
    [shell] = [e.observation for e in events if isinstance(e, ToolObserved) and e.observation.tool == "shell"]
    assert shell.error_kind == "interrupted" and "whether it took effect is unknown" in shell.text
    assert sum(isinstance(e, ModelReplied) for e in events) == 4  # the scripted model went on from reply 3
    assert (run_dir / "workspace" / "c.txt").read_text() == "C"
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "submitted"


def intent_of(run_dir: Path, call_id: str) -> bool:
    path = run_dir / "events.jsonl"
    return path.exists() and f'"tool_intent","call_id":"{call_id}"' in path.read_text()


def wait_for(probe, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (found := probe()) is not None:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the run to reach its shell command")
