"""Harness overhead per step as the history grows: step 10 vs 100 vs 1,000, in one run, for every preset.

Overhead = the whole step minus the model call and the tool call: rendering the
prompt, journaling (fsync per event), dispatching, updating state, checking stop
rules and deciding whether to compact. Target: step 1,000 costs at most 1.5x step 10
under every preset. Compacting presets fold with the extractive summariser (no
model), so the model's replies stay the agent's; a step that compacts is one of the
ten around each point, so the median leaves it out.

    .venv/bin/python benchmarks/bench_loop.py [PRESET ...] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel  # noqa: E402

from agent.journal.store import Journal, RunInfo  # noqa: E402
from agent.loop import run  # noqa: E402
from agent.parts import Session  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.tokens import counter_for  # noqa: E402
from core.events import ModelReplied  # noqa: E402
from core.policy import HarnessPolicy, StopPolicy  # noqa: E402
from core.presets import PRESETS  # noqa: E402
from core.types import Message, ModelReply, ToolCall, Usage  # noqa: E402
from memory.extractive import ExtractiveSummariser  # noqa: E402
from sandboxes.local import LocalSandbox  # noqa: E402
from tools.base import Effect, Registry, Tool, ToolResult  # noqa: E402

STEPS = 1000
WINDOWS = {10: range(6, 16), 100: range(96, 106), 1000: range(990, 1000)}


class N(BaseModel):
    n: int


NOOP = Tool("noop", "do nothing", "Do nothing and say so.", N, Effect.READ, lambda a, c: ToolResult(f"step {a.n} done"))


class TimedModel:
    """Prebuilt replies, so the model's own time is near zero and measured anyway."""

    name = "bench"

    def __init__(self):
        self.replies = [
            ModelReply(
                message=Message(
                    role="assistant",
                    text=f"step {i}",
                    tool_calls=(ToolCall(id=f"c{i}", name="noop", arguments=f'{{"n": {i}}}'),),
                ),
                usage=Usage(prompt_tokens=10, completion_tokens=5),
            )
            for i in range(STEPS + 1)
        ]
        self.i = 0
        self.spent: dict[int, float] = {}

    def complete(self, messages, tools, params):
        start = time.perf_counter()
        reply = self.replies[self.i]
        self.i += 1
        self.spent[self.i] = time.perf_counter() - start
        return reply


def measure(policy: HarnessPolicy, where: str | None) -> dict[str, dict[int, float]]:
    """Per window: `wall`, the step's overhead in wall time, and `cpu`, the loop thread's CPU time
    for the step (what the harness computes, without waiting for the disk or for other processes)."""
    model = TimedModel()
    starts: dict[int, float] = {}
    cpu: dict[int, float] = {}
    tool_time: dict[int, float] = {}

    def listen(event):
        if isinstance(event, ModelReplied):
            starts[event.step] = time.perf_counter() - model.spent[event.step]
            cpu[event.step] = time.thread_time()
        elif event.type == "tool_observed":
            tool_time[event.step] = event.observation.duration_s

    policy = policy.model_copy(update={"stop": StopPolicy(max_steps=STEPS, max_repeats=STEPS)})
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        info = RunInfo(
            run_id="bench",
            task={"id": "bench"},
            model=model.name,
            sandbox="local",
            policy=policy.model_dump(mode="json"),
            started_at="2026-01-01T00:00:00Z",
        )
        journal = Journal.create(Path(tmp), info)
        journal.listeners.append(listen)
        box = LocalSandbox(journal.dir / "workspace")
        try:
            session = Session(
                task=Task(prompt="bench"),
                policy=policy,
                model=model,
                journal=journal,
                sandbox=box,
                tools=Registry.of([NOOP]),
            )
            run(session, summariser=ExtractiveSummariser(counter_for(model)))
        finally:
            box.close()
            journal.close()
    wall = {s: starts[s + 1] - starts[s] - model.spent[s + 1] - tool_time[s] for s in range(1, STEPS)}
    used = {s: cpu[s + 1] - cpu[s] for s in range(1, STEPS)}
    return {
        what: {k: statistics.median(per_step[s] for s in window) for k, window in WINDOWS.items()}
        for what, per_step in (("wall", wall), ("cpu", used))
    }


def best_of(policy: HarnessPolicy, where: str | None, runs: int = 3) -> dict[str, dict[int, float]]:
    """Other processes add noise (fsync above all); the least disturbed of a few runs is the cost."""
    results = [measure(policy, where) for _ in range(runs)]
    return {what: {k: min(r[what][k] for r in results) for k in WINDOWS} for what in ("wall", "cpu")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("presets", nargs="*", help=f"default: all of {', '.join(PRESETS)}")
    parser.add_argument(
        "--dir",
        help="where the runs are written (default: the system's temp folder); "
        "/dev/shm takes the disk's fsync latency out of the wall times",
    )
    args = parser.parse_args()
    unknown = [n for n in args.presets if n not in PRESETS]
    if unknown:
        parser.error(f"unknown preset(s) {', '.join(unknown)}; known: {', '.join(PRESETS)}")
    print(
        f"harness overhead per step (median of 10 steps around each point, best of 3 runs), {STEPS}-step runs, "
        f"fsync per event, runs in {args.dir or tempfile.gettempdir()}"
    )
    print(f"{'':<22}{'wall time':^46}{'loop thread CPU time':^46}")
    head = "".join(f"{f'step {k}':>12}" for k in WINDOWS) + f"{'1000/10':>10}"
    print(f"{'policy':<22}{head}{head}")
    for name in args.presets or list(PRESETS):
        m = best_of(PRESETS[name], args.dir)
        print(
            f"{name:<22}"
            + "".join(
                "".join(f"{m[w][k] * 1e3:>10.2f}ms" for k in WINDOWS) + f"{m[w][1000] / m[w][10]:>9.2f}x"
                for w in ("wall", "cpu")
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
