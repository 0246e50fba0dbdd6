"""snapshot.json: written every K steps and at every stop, atomically, and bounded in size."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.events import ModelReplied, RunStopped
from core.policy import CheckpointPolicy, HarnessPolicy
from tests.agent.helpers import call
from tests.agent.long_run import fast_dir, long_run


def test_size_at_step_1000_is_within_10_percent_of_step_50():
    sizes = {}

    def watch(run_dir):
        def listener(event):
            # The snapshot of step K is on disk when step K + 1's reply is journaled.
            if isinstance(event, ModelReplied) and event.step - 1 in (50, 950):
                sizes[event.step - 1] = (run_dir() / "snapshot.json").stat().st_size

        return listener

    with tempfile.TemporaryDirectory(dir=fast_dir()) as tmp:

        def found() -> Path:
            return next(Path(tmp).iterdir())

        summary, run_dir = long_run(Path(tmp), 1000, snapshot_every=50, listeners=(watch(found),))
        sizes[1000] = (run_dir / "snapshot.json").stat().st_size  # written at the stop, after step 1,000's reply
        snap = json.loads((run_dir / "snapshot.json").read_text())
        events_bytes = (run_dir / "events.jsonl").stat().st_size
    assert summary.stop_reason == "awaiting_approval" and summary.steps == 1000
    assert abs(sizes[1000] - sizes[50]) <= 0.1 * sizes[50], sizes
    assert abs(sizes[950] - sizes[50]) <= 0.1 * sizes[50], sizes
    assert sizes[1000] < events_bytes / 100  # not the transcript
    assert snap["stop"] == "awaiting_approval" and snap["pending"] == ["call_1000_0"] and len(snap["window"]) == 8


def test_written_every_k_steps_and_at_the_stop_covering_the_journal(tmp_path):
    seen = []

    def listener(event):
        if isinstance(event, ModelReplied):
            path = next(tmp_path.iterdir()) / "snapshot.json"
            seen.append(json.loads(path.read_text())["state"]["step"] if path.exists() else None)

    replies = [call("shell", command=f"echo {i}") for i in range(1, 6)] + [call("submit", answer="ok")]
    policy = HarnessPolicy(checkpoint=CheckpointPolicy(snapshot_every=2))
    summary, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path, listeners=(listener,)))
    assert seen == [None, None, 2, 2, 4, 4]  # as each step's reply arrives: the latest snapshot's step
    snap = json.loads((run_dir / "snapshot.json").read_text())
    events = read_events(run_dir)
    assert isinstance(events[-1], RunStopped) and snap["last_seq"] == events[-2].seq and snap["stop"] == "submitted"
    assert snap["state"]["step"] == 6 and snap["state"]["submission"] == "ok" and "history" not in snap["state"]
    assert snap["sandbox"] == {"kind": "LocalSandbox", "workdir": str((run_dir / "workspace").resolve())}
    assert not list(run_dir.glob("*.tmp"))  # written atomically: no temp file left behind
