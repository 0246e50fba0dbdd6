"""A run built to be killed: slow appends to a counter file, each tagged with its idempotency key.

The crash test and benchmarks/bench_resume.py start it in a subprocess, SIGKILL it at
random moments, and resume it until it finishes:

    python -m tests.agent.crash_driver start OUT STEPS   # a new run under OUT
    python -m tests.agent.crash_driver resume RUN_DIR    # continue it

Each process prints `ready` just before the loop starts, so a caller can aim its kills
at the run rather than at Python's start-up. Every prompt the model is sent is logged
(as a digest, per reply index) to `prompts.jsonl` beside the run directory, so a test
can check that a resumed run sends exactly the prompts an uninterrupted run sends.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from core.events import MessageAdded, ModelReplied, RunResumed, ToolObserved
from agent.journal import read_events
from agent.launch import launch
from agent.models.scripted import ScriptedModel
from core.policy import CheckpointPolicy, HarnessPolicy
from agent.resume import resume
from agent.task import Task
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult
from tools.builtin.submit import SUBMIT

ROOT = Path(__file__).resolve().parents[2]  # the repository: the driver runs as `python -m tests.agent.crash_driver`
COUNTER = "counter.txt"
SLOW_S = 0.03  # before and after the append: a kill often lands inside the tool


class AppendArgs(BaseModel):
    value: int


def append(args: AppendArgs, ctx: ToolContext) -> ToolResult:
    time.sleep(SLOW_S)
    # One write(2) of a short line to an O_APPEND file: under SIGKILL it happens whole or not at all.
    fd = os.open(Path(ctx.sandbox.workdir, COUNTER), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{args.value} {ctx.idempotency_key}\n".encode())
    finally:
        os.close(fd)
    time.sleep(SLOW_S)
    return ToolResult(f"appended {args.value}")


def append_done(args: AppendArgs, ctx: ToolContext) -> ToolResult | None:
    path = Path(ctx.sandbox.workdir, COUNTER)
    tags = {line.split()[-1] for line in path.read_text().splitlines() if line.strip()} if path.exists() else set()
    return ToolResult(f"appended {args.value}") if ctx.idempotency_key in tags else None


def read_counter(args: BaseModel, ctx: ToolContext) -> ToolResult:
    path = Path(ctx.sandbox.workdir, COUNTER)
    values = [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []
    return ToolResult(" ".join(values) or "empty")


class NoArgs(BaseModel):
    pass


APPEND = Tool(name="append", summary="Append a value to the counter file.", description="Append a value.",
              args=AppendArgs, effect=Effect.WRITE, run=append, already_done=append_done)
READ = Tool(name="read_counter", summary="Show the counter file.", description="Show the values so far.",
            args=NoArgs, effect=Effect.READ, run=read_counter)
POLICY = HarnessPolicy(name="crash", checkpoint=CheckpointPolicy(snapshot_every=3))


def tools() -> Registry:
    return Registry.of([APPEND, READ, SUBMIT])


def script(steps: int) -> list[dict]:
    replies = []
    for i in range(1, steps + 1):
        replies.append({"tool_calls": [{"name": "append", "arguments": {"value": i}}]})
        if i % 4 == 0:
            replies.append({"tool_calls": [{"name": "read_counter", "arguments": {}}]})
    return replies + [{"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}]


class PromptLoggingModel(ScriptedModel):
    """The scripted model, logging a digest of every prompt it is sent, by reply index."""

    log: Path

    def complete(self, messages, tools, params):
        digest = hashlib.sha256(json.dumps([m.model_dump(mode="json") for m in messages]).encode()).hexdigest()
        with open(self.log, "a") as f:
            f.write(json.dumps({"index": self.calls, "prompt": digest}) + "\n")
        return super().complete(messages, tools, params)


def model(script_file: Path, log: Path) -> PromptLoggingModel:
    scripted = PromptLoggingModel.from_file(script_file)
    scripted.log = log
    return scripted


def start(out: Path, steps: int, announce: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    script_file = out / "script.json"
    script_file.write_text(json.dumps(script(steps)))
    if announce:
        print("ready", flush=True)
    launch(Task(id="crash", prompt="Append 1, 2, 3, ... to the counter, then submit."),
           model(script_file, out / "prompts.jsonl"), "local", POLICY, out / "runs", tools=tools())


def resume_run(run_dir: Path) -> None:
    out = run_dir.parent.parent
    print("ready", flush=True)
    done = resume(run_dir, model=model(out / "script.json", out / "prompts.jsonl"), tools=tools())
    for note in done.notes:
        print("note:", note, flush=True)


@dataclass
class Torture:
    kills: int = 0
    runs: list[Path] = field(default_factory=list)  # finished run directories
    processes: int = 0


def torture(root: Path, kills: int, steps: int, seed: int, window_s: float) -> Torture:
    """Start runs and SIGKILL them at random moments (uniform over `window_s` after `ready`), resuming
    each until it finishes, until `kills` kills have landed on a live process."""
    rng = random.Random(seed)
    stats = Torture()
    while stats.kills < kills:
        out = root / f"run{len(stats.runs)}"
        run_dir = None
        while True:
            args = ["resume", str(run_dir)] if run_dir is not None else ["start", str(out), str(steps)]
            proc = subprocess.Popen([sys.executable, "-m", "tests.agent.crash_driver", *args], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            stats.processes += 1
            proc.stdout.readline()  # "ready": the harness is about to act
            time.sleep(rng.uniform(0, window_s))
            if stats.kills < kills and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                stats.kills += 1
                run_dir = _run_dir(out)
                continue
            output = proc.communicate()[0]
            if proc.returncode != 0:
                raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{output}")
            run_dir = run_dir or _run_dir(out)
            if not (run_dir / "summary.json").exists():  # finished just as the kill quota ran out: one more resume
                continue
            stats.runs.append(run_dir)
            break
    return stats


def problems(run_dir: Path, reference: Path) -> list[str]:
    """How a killed-and-resumed run differs from the uninterrupted `reference` run; [] when it does not."""
    found = []
    summary, want = (json.loads((d / "summary.json").read_text()) for d in (run_dir, reference))
    if (summary["stop_reason"], summary["steps"]) != (want["stop_reason"], want["steps"]):
        found.append(f"stopped {summary['stop_reason']} after {summary['steps']} steps, not {want['stop_reason']} after {want['steps']}")
    if (run_dir / "workspace" / COUNTER).read_text() != (reference / "workspace" / COUNTER).read_text():
        found.append("the counter file differs: a write was lost or applied twice")
    if conversation(run_dir) != conversation(reference):
        found.append("the conversation in the journal differs")
    events = read_events(run_dir)
    if [e.seq for e in events] != list(range(1, len(events) + 1)):
        found.append("event seqs are not 1, 2, 3, ...")
    observed = Counter(e.observation.call_id for e in events if isinstance(e, ToolObserved))
    if any(n != 1 for n in observed.values()):
        found.append(f"calls observed more than once: {[c for c, n in observed.items() if n != 1]}")
    logged, wanted = prompt_log(run_dir.parent.parent), {p["index"]: p["prompt"] for p in prompt_log(reference.parent.parent)}
    if {p["index"] for p in logged} != set(wanted) or any(p["prompt"] != wanted[p["index"]] for p in logged):
        found.append("a prompt differs from the uninterrupted run's")
    return found


def conversation(run_dir: Path) -> list:
    """What the model saw, in order, as the journal records it."""
    out = []
    for e in read_events(run_dir):
        if isinstance(e, MessageAdded):
            out.append(e.message)
        elif isinstance(e, ModelReplied):
            out.append(e.reply.message)
        elif isinstance(e, ToolObserved):
            out.append((e.observation.call_id, e.observation.status, e.observation.text))
    return out


def prompt_log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]


def kills_inside_tools(run_dir: Path) -> int:
    """Resumes that found a write cut short while it ran."""
    return sum("was running when the process died" in n for e in read_events(run_dir) if isinstance(e, RunResumed)
               for n in e.notes)


def _run_dir(out: Path) -> Path | None:
    """The run's directory once it has a run.json (a start killed earlier than that left nothing to resume)."""
    return next((d for d in (out / "runs").glob("*") if (d / "run.json").exists()), None)


if __name__ == "__main__":
    if sys.argv[1] == "start":
        start(Path(sys.argv[2]), int(sys.argv[3]), announce=True)
    else:
        resume_run(Path(sys.argv[2]))
