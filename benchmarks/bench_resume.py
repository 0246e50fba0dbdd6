"""Resume of a long run: how long it takes, and what the snapshot saves.

A STEPS-step run under a bounded context stops awaiting approval of its last step
(snapshot every 10 steps). Timed: rebuilding its state (snapshot + journal, the work
a resume does before it acts), the same without a snapshot, and the whole
`resume()` that finishes the run. Snapshot sizes at step 50 and at the stop.

kill -9 at random moments is measured by benchmarks/bench_crash_matrix.py, for every sandbox,
context policy and kind of write.

    .venv/bin/python benchmarks/bench_resume.py [--steps 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.journal.snapshot import load_snapshot  # noqa: E402
from agent.journal.store import read_events, read_run_info  # noqa: E402
from agent.models.scripted import ScriptedModel  # noqa: E402
from agent.recovery.approval import record_decision  # noqa: E402
from agent.recovery.restore import restore  # noqa: E402
from agent.resume import resume  # noqa: E402
from agent.run.task import Task  # noqa: E402
from core.events import ModelReplied  # noqa: E402
from tests.agent import long_run  # noqa: E402


def rebuild_s(run_dir: Path, with_snapshot: bool) -> float:
    start = time.perf_counter()
    task = Task.model_validate(read_run_info(run_dir).task)
    snap = load_snapshot(run_dir)[0] if with_snapshot else None
    restored = restore(task, read_events(run_dir), snap)
    assert restored.open is not None and restored.from_seq == (snap.last_seq if snap else 0)
    return time.perf_counter() - start


def resume_figures(steps: int) -> None:
    sizes: dict[int, int] = {}
    with tempfile.TemporaryDirectory(dir=long_run.fast_dir()) as tmp:

        def at_51(event):
            if isinstance(event, ModelReplied) and event.step == 51:
                sizes[50] = (next(Path(tmp).iterdir()) / "snapshot.json").stat().st_size

        start = time.perf_counter()
        summary, run_dir = long_run.long_run(Path(tmp), steps, snapshot_every=10, listeners=(at_51,))
        built = time.perf_counter() - start
        sizes[steps] = (run_dir / "snapshot.json").stat().st_size
        journal_mb = (run_dir / "events.jsonl").stat().st_size / 1e6
        print(
            f"{steps}-step run: built in {built:.1f} s, stopped {summary.stop_reason}; "
            f"events.jsonl {journal_mb:.2f} MB, {len(read_events(run_dir))} events"
        )
        print(
            f"snapshot.json: {sizes[50]} bytes at step 50, {sizes[steps]} bytes at step {steps} "
            f"({(sizes[steps] - sizes[50]) / sizes[50]:+.1%})"
        )
        warm = [rebuild_s(run_dir, True) for _ in range(5)]
        cold = [rebuild_s(run_dir, False) for _ in range(3)]
        print(
            f"rebuild the state from snapshot + journal: median {statistics.median(warm) * 1000:.0f} ms "
            f"(of 5); without a snapshot: median {statistics.median(cold) * 1000:.0f} ms (of 3)"
        )
        record_decision(run_dir, f"call_{steps}_0", True)
        start = time.perf_counter()
        done = resume(run_dir, model=ScriptedModel(long_run.script(steps)), tools=long_run.tools())
        took = time.perf_counter() - start
        print(
            f"resume of the {steps}-step run (rebuild, reconnect, finish the open step, one more step, summary): "
            f"{took:.2f} s -> {done.summary.stop_reason} after {done.summary.steps} steps "
            f"[{'under' if took < 1 else 'OVER'} 1 s]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    resume_figures(args.steps)


if __name__ == "__main__":
    main()
