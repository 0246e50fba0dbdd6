"""The agent's memory across a kill -9: a run killed between two memory writes and resumed ends with the
store of the uninterrupted run, byte for byte, and a replay of it rebuilds that same store.

Real subprocesses and real SIGKILL (see crash_driver): each step the memory tool writes the next line of
/memories/counter.md; the kills are aimed right after a write is journaled, before its observation."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from agent.journal.store import read_events
from agent.memory_dir import on_disk
from agent.recorded.replay import replay
from core.events import MemoryWritten, RunResumed
from tests.agent.recovery import crash_driver

STEPS = 4
CELL = crash_driver.Cell("local", "compacting", "memory")


def killed_after_memory_write(out: Path, k: int) -> Path:
    """A run SIGKILLed right after its k-th memory write is journaled, resumed until it finishes."""
    env = {**os.environ, crash_driver.DIE_AFTER: f"memory_written:{k}"}
    args = crash_driver.driver("start", str(out), str(STEPS), CELL.name)
    died = subprocess.run(args, cwd=crash_driver.ROOT, env=env, capture_output=True, text=True)
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    run_dir = next((out / "runs").glob("*"))
    resumed = subprocess.run(crash_driver.driver("resume", str(run_dir)), cwd=crash_driver.ROOT, capture_output=True)
    assert resumed.returncode == 0, resumed.stdout
    return run_dir


def test_a_run_killed_between_two_memory_writes_resumes_to_the_same_store_and_replays_it(tmp_path):
    reference, _ = crash_driver.run_once(CELL, tmp_path / "reference", STEPS)
    assert crash_driver.counter(reference) == list(range(1, STEPS + 1))
    want = on_disk(reference / "memories")
    assert want == {"/memories/counter.md": b"1\n2\n3\n4\n"}

    for k in range(1, STEPS):
        run_dir = killed_after_memory_write(tmp_path / f"killed{k}", k)
        assert crash_driver.problems(run_dir, reference) == [], run_dir
        assert on_disk(run_dir / "memories") == want
        events = read_events(run_dir)
        resumed = next(i for i, e in enumerate(events) if isinstance(e, RunResumed))
        assert isinstance(events[resumed - 1], MemoryWritten)  # the process died between two memory writes
        assert sum(isinstance(e, MemoryWritten) for e in events[:resumed]) == k

        done = replay(run_dir, out=tmp_path / "replays")
        assert done.harness == [], done.harness
        assert on_disk(done.replay_dir / "memories") == want
        recorded = [x for e in events if isinstance(e, MemoryWritten) for x in e.entries]
        replayed = [x for e in read_events(done.replay_dir) if isinstance(e, MemoryWritten) for x in e.entries]
        assert [(e.path, e.text, e.at, e.step, e.call_id, e.kind) for e in replayed] == [
            (e.path, e.text, e.at, e.step, e.call_id, e.kind) for e in recorded
        ]
