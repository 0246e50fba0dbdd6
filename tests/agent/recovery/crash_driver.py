"""Runs built to be killed: each step writes the next value of a counter, in one of three ways.

A cell is a sandbox (local, docker), a context policy (append-only, compacting every third
step with a scripted summariser, or overflowing: a window so small that emergency folds and cuts
happen every step or two) and a kind of write:

- `shell`: an idempotent command (`grep -sqx N counter.txt || echo N >> counter.txt`), so an
  interrupted one simply runs again (`checkpoint.interrupted_writes = "rerun"`);
- `write_file`: the built-in tool writes the whole counter so far (its own check settles a cut-short write);
- `mcp`: `put(N, N)` of the stdio MCP server tests/tools/mcp/servers/counter.py, into a JSON file
  beside the run.
- `memory`: the memory tool inserts N as line N of /memories/counter.md (the store the harness keeps
  outside the sandbox); kills are aimed right after a memory write is journaled, before its observation,
  so the process dies between two memory writes. The store must come out as the uninterrupted run's.
- `code`: in code mode, one run_code program makes every counter write as a shell call of its own (the
  `shell` writes above), then another reads it back; kills are aimed right after a program's write intent is
  journaled, so the process dies inside a program, between two of its writes. The program runs again on
  resume, its journaled calls answered from the journal: each write is made once.
- `code-mcp`: the same, each write a `put(N, N)` of the MCP server: a program's calls to a server that lives in
  another process, answered from the journal on resume (the server is started anew), the cut-short one made again.

A fork cell (`local/append-only/shell/fork`, and docker's) runs the cell's script once, uninterrupted, as the
parent, then forks it at step FORK_AT (`harness fork`, the same policy and script; a code-mode parent is forked
under calls mode, its programs played by its own run_code in the branch): the kills land in the fork,
in turn aimed inside its branch (the process dies once the branch has run the parent's first or second write
again), aimed at its own steps (once one or two of them were observed) and at a random moment, and the fork must
come out as an uninterrupted fork of the same parent.

The overflowing cell (local, shell writes only) prints an output of a few thousand tokens after each
write, in a 4,000-token window: from the third step on every step needs an emergency fold (its
memory written by the scripted model), some a cut as well, and the longest outputs are cut at
dispatch. Where its summaries fall is found by running it once in-process first.

The last step reads the counter back (`cat counter.txt`, or the server's `read`), so the final
content is in the journal even when it lived in a container that is gone. The crash test and
benchmarks/bench_crash_matrix.py start runs in a subprocess, SIGKILL them at random moments (or, in a
cell named .../TERM or .../INT, send them SIGTERM or SIGINT, which each process handles as `harness run`
does: it stops at its next safe point, writes its stop, snapshot and summary, and exits 143 or 130), and
resume them until they finish; every finished run that was resumed is replayed as well:

    python -m tests.agent.recovery.crash_driver start OUT STEPS CELL   # a new run under OUT; CELL as local/append-only/shell
    python -m tests.agent.recovery.crash_driver resume RUN_DIR         # continue it

Each process prints `ready` just before the run starts or resumes, so a caller can aim its kills
at the run rather than at Python's start-up (or at an event: with CRASH_DIE_AFTER=TYPE:N in its
environment a process SIGKILLs itself once the journal holds N events of that type; with TYPE:N:TERM
or TYPE:N:INT it sends itself that signal instead; `asking:N` stops it halfway through the model's wait for
reply N, `opening:1` kills it as its run is opened, its task made, before its opening is journaled), and a resume
prints `resumed_in SECONDS` once its run_resumed event is written (state rebuilt, sandbox
reconnected, MCP servers connected). Every prompt the model is sent is logged (as a digest, per
reply index) to `prompts.jsonl` beside the run directory, so a resumed run can be checked to send
exactly the prompts an uninterrupted run sends.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent import rebuild, session
from agent.fork import fork
from agent.journal.fold import fold
from agent.journal.store import read_events
from agent.memory_dir import on_disk
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.compare import compare_harness, memory_as_compared
from agent.recorded.replay import replay
from agent.resume import resume
from agent.run.stopping import RESUMABLE
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, start
from core.context_policy import Compact, ContextStep, RepoMap, TruncationPolicy
from core.events import (
    Compacted,
    ContextOverflowed,
    Event,
    InnerObserved,
    MemoryWritten,
    MessageAdded,
    ModelReplied,
    RunResumed,
    RunStopped,
    SummaryReplied,
    ToolObserved,
)
from core.interrupts import EXIT_CODES, Abandoned, requested, signals_handled
from core.mcp_settings import McpServer
from core.memory_types import WorkingMemory
from core.policy import (
    CheckpointPolicy,
    CodeToolName,
    DispatchPolicy,
    HarnessPolicy,
    MemoryPolicy,
    ModelParams,
    OverflowPolicy,
)
from tests.agent.costly_run import SummarisingModel

ROOT = (
    Path(__file__).resolve().parents[3]
)  # the repository: the driver runs as `python -m tests.agent.recovery.crash_driver`
SERVER = ROOT / "tests" / "tools" / "mcp" / "servers" / "counter.py"
COUNTER = "counter.txt"
MCP_COUNTER = "counter.json"  # beside the run directory: the MCP server's file
VALUES = "counter://values"  # the server's resource of the counter's values, placed before the task
MEMORY_COUNTER = "/memories/counter.md"
SLOW_S = 0.03  # before and after each shell or MCP write: a kill often lands inside the tool
MEMORY = '{"goal": "write 1, 2, 3, ... to the counter", "failed_approaches": []}'
TASK = Task(id="crash", prompt="Write 1, 2, 3, ... to the counter, read it back, then submit.")
# The search cell's repository: each write also defines value_N in values.py, which the code tools then index.
REPOSITORY = {"counter.py": "def counter_file():\n    return 'counter.txt'\n", "values.py": "VALUES = []\n"}
COMMIT = (  # one commit id in every run: the code tools name it
    "git init -q && git add -A && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z "
    "git -c user.name=crash -c user.email=crash@example.com commit -qm base"
)
WINDOW = 4000  # the overflowing cell's: a prompt of the task and two outputs does not fit
OUTPUT_LINES = (150, 260, 700, 90, 380)  # after each write of that cell, in turn: about 9 tokens a line
DIE_AFTER = "CRASH_DIE_AFTER"  # TYPE:N in a driver's environment: it kills itself once the journal has N such events
REBUILD = "rebuild"  # as a TYPE of DIE_AFTER: once a fork's branch has run N of its parent's writes again
ASKING = "asking"  # as a TYPE of DIE_AFTER: halfway through the model's wait for its Nth reply of the run
OPENING = "opening"  # as a TYPE of DIE_AFTER: as the run is opened, once its task's files, setup and map are made
MODEL_WAIT_S = 0.25  # how long a slow-model cell's model takes to answer: kills land inside the model call
FORK_AT = 2  # a fork cell's branch step: the writes of steps 1 and 2 run again
# Where torture aims kills, beside random moments, by context policy or kind of write.
AIMS = {
    "overflowing": ("summary_replied", "context_overflow"),
    "memory": ("memory_written",),
    # a fork's process dies after its branch ran the parent's first or second write again, or in its own steps
    "fork": (REBUILD, "tool_observed"),
    "code": ("inner_intent",),
    "code-mcp": ("inner_intent",),
    # between a step's write and its searches, or between two searches: the next process indexes the workspace anew
    # or while the run is opened, its repository map made: the run begins again
    "search": ("tool_observed", OPENING),
    # right after a put is observed, before the next step takes the placed resource's update; or while the run is
    # opened, its task made from the server's prompt: the run begins again
    "mcp-resource": ("tool_observed", OPENING),
    # a slow-model cell's process dies (or gets the cell's signal) while the model is asked for its next reply
    "slow": (ASKING,),
    # a signal cell's process signals itself as a write's intent is journaled: the call is stopped before it runs,
    # and left for the resume to settle as a call cut short
    "TERM": ("tool_intent",),
    "INT": ("tool_intent",),
}

Sandbox = Literal["local", "docker"]
Context = Literal["append-only", "compacting", "overflowing"]
Writes = Literal["shell", "write_file", "mcp", "memory", "code", "code-mcp", "search", "mcp-resource"]
Stop = Literal["KILL", "TERM", "INT"]  # how a process is stopped: SIGKILL, or SIGTERM and SIGINT, which it handles


@dataclass(frozen=True)
class Cell:
    sandbox: Sandbox
    context: Context
    writes: Writes
    fork: bool = False  # the run is a fork (`harness fork`) of an uninterrupted run at step FORK_AT
    stop: Stop = "KILL"
    model: Literal["instant", "slow"] = "instant"  # slow: it waits MODEL_WAIT_S before each reply

    @property
    def name(self) -> str:
        return (
            f"{self.sandbox}/{self.context}/{self.writes}"
            + ("/fork" if self.fork else "")
            + ("/slow-model" if self.model == "slow" else "")
            + ("" if self.stop == "KILL" else f"/{self.stop}")
        )

    @property
    def signal(self) -> signal.Signals:
        return signal.Signals[f"SIG{self.stop}"]

    @classmethod
    def parse(cls, name: str) -> Cell:
        cell = next((c for c in CELLS if c.name == name), None)
        if cell is None:
            raise ValueError(f"unknown cell {name!r}; cells are {', '.join(c.name for c in CELLS)}")
        return cell


CELLS = [
    *(
        Cell(s, c, w)
        for s in ("local", "docker")
        for c in ("append-only", "compacting")
        for w in ("shell", "write_file", "mcp")
    ),
    Cell("local", "overflowing", "shell"),
    *(Cell(s, "compacting", "memory") for s in ("local", "docker")),
    *(Cell(s, "append-only", "shell", fork=True) for s in ("local", "docker")),
    *(Cell(s, "append-only", "code") for s in ("local", "docker")),
    Cell("local", "append-only", "code-mcp"),
    # Stopped by a signal at random moments: each process stops at its next safe point, writing its stop and summary.
    *(
        Cell(s, c, w, stop=stop)
        for s in ("local", "docker")
        for c, ws in (("append-only", ("shell", "write_file", "mcp")), ("compacting", ("shell",)))
        for w in ws
        for stop in ("TERM", "INT")
    ),
    *(Cell(s, "append-only", "shell", fork=True, stop="TERM") for s in ("local", "docker")),
]
# Cells for the model call and for the levers the ones above leave out; the CI test runs a few of them.
LATER_CELLS = [
    # Forks of a code-mode run (the branch runs the parent's programs again) and of a run that kept memory.
    *(Cell(s, "append-only", "code", fork=True) for s in ("local", "docker")),
    *(Cell(s, "compacting", "memory", fork=True) for s in ("local", "docker")),
    # A model that takes a while to answer: kills and signals land inside the model call (an agent's or a summary's).
    *(
        Cell(s, c, "shell", stop=stop, model="slow")
        for s in ("local", "docker")
        for c in ("append-only", "compacting")
        for stop in ("KILL", "TERM")
    ),
    # A task made from the server's prompt, its resource of the counter's values placed before it and followed.
    *(Cell(s, "append-only", "mcp-resource") for s in ("local", "docker")),
    # The code tools (search_code, find_symbol, repo_map) and a repository map, over a workspace each write changes.
    *(Cell(s, "append-only", "search") for s in ("local", "docker")),
]
CELLS += LATER_CELLS


def task(cell: Cell) -> Task:
    if cell.writes != "search":
        return TASK
    return TASK.model_copy(update={"files": REPOSITORY, "setup": [COMMIT]})


def policy(cell: Cell, out: Path) -> HarnessPolicy:
    context: list[ContextStep] = (
        [Compact(every_steps=3, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")]
        if cell.context == "compacting"
        else []
    )
    if cell.writes == "search":
        context.append(RepoMap(budget=256))
    mcp = (
        [
            McpServer(
                name="counter",
                command=sys.executable,
                trusted=True,
                args=[str(SERVER), str((out / MCP_COUNTER).resolve()), "--slow", str(SLOW_S)],
            )
        ]
        if cell.writes in ("mcp", "code-mcp", "mcp-resource")
        else []
    )
    # `rerun`: a kill inside a write no check can settle (shell, MCP, submit) runs it again, as the uninterrupted run did.
    checkpoint = CheckpointPolicy(interrupted_writes="rerun", snapshot_every=3)
    memory = MemoryPolicy(tool=cell.writes == "memory")
    dispatch = DispatchPolicy(mode="code" if cell.writes in ("code", "code-mcp") else "calls")
    code_tools: list[CodeToolName] = ["search_code", "find_symbol", "repo_map"] if cell.writes == "search" else []
    policy = HarnessPolicy(
        name="crash",
        context=context,
        mcp=mcp,
        checkpoint=checkpoint,
        memory=memory,
        dispatch=dispatch,
        code_tools=code_tools,
        mcp_resources=[f"counter:{VALUES}"] if cell.writes == "mcp-resource" else [],
    )
    if cell.context != "overflowing":
        return policy
    return policy.model_copy(
        update={
            "model": ModelParams(context_window=WINDOW, max_tokens=256),
            # Outputs up to nine tenths of the window: after a fold the newest step alone may not fit, and is cut.
            "overflow": OverflowPolicy(summariser="model", observation_share=0.9),
            "truncation": TruncationPolicy(head_chars=100_000, tail_chars=100_000),
        }
    )


def fork_policy(cell: Cell, out: Path) -> HarnessPolicy | None:
    """A fork cell's policy (None: its parent's): a code-mode run is forked under calls mode, so its branch plays
    the parent's programs with the parent's run_code, which the fork does not offer."""
    if cell.writes != "code":
        return None
    return policy(cell, out).model_copy(update={"dispatch": DispatchPolicy(mode="calls")})


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def write(cell: Cell, i: int) -> dict:
    if cell.writes == "search":
        return searched(i)
    if cell.writes == "shell":
        output = (
            f' seq -f "output line %g of write {i}" 1 {OUTPUT_LINES[(i - 1) % len(OUTPUT_LINES)]};'
            if cell.context == "overflowing"
            else ""
        )
        return call(
            "shell",
            command=f"sleep {SLOW_S}; grep -sqx {i} {COUNTER} || echo {i} >> {COUNTER};{output} sleep {SLOW_S}",
        )
    if cell.writes == "write_file":
        return call("write_file", path=COUNTER, content="".join(f"{v}\n" for v in range(1, i + 1)))
    if cell.writes == "memory":
        if i == 1:
            return call("memory", command="create", path=MEMORY_COUNTER, file_text="1\n")
        return call("memory", command="insert", path=MEMORY_COUNTER, insert_line=i - 1, insert_text=str(i))
    return call("counter__put", index=i, value=i)


def searched(i: int) -> dict:
    """A counter write that also defines value_i in values.py, then the code tools over the changed workspace."""
    define = f"grep -sq '^def value_{i}()' values.py || printf 'def value_{i}():\\n    return {i}\\n' >> values.py"
    command = f"sleep {SLOW_S}; grep -sqx {i} {COUNTER} || echo {i} >> {COUNTER}; {define}; sleep {SLOW_S}"
    calls = [
        {"name": "shell", "arguments": {"command": command}},
        {"name": "search_code", "arguments": {"query": f"value {i}", "k": 3}},
        {"name": "find_symbol", "arguments": {"name": f"value_{i}"}},
    ]
    if i % 3 == 0:
        calls.append({"name": "repo_map", "arguments": {"focus": "values", "budget": 128}})
    return {"tool_calls": calls}


def program(cell: Cell, steps: int) -> dict:
    """One run_code program that makes every counter write as a shell call of its own (or an MCP put)."""
    command = f"sleep {SLOW_S}; grep -sqx {{i}} {COUNTER} || echo {{i}} >> {COUNTER}; sleep {SLOW_S}"
    write = "counter__put(index=i, value=i)" if cell.writes == "code-mcp" else f"shell(command=f{command!r})"
    code = f"for i in range(1, {steps + 1}):\n    {write}\n    print('wrote', i)\n"
    return call("run_code", code=code)


def script(cell: Cell, steps: int, out: Path) -> list[dict]:
    """The agent's replies, one a step, with the summariser's reply after every third step that has a
    step after it (the model answers both, in the order they are asked for); in the overflowing cell,
    wherever a run of it asks for one."""
    read = {
        "mcp": call("counter__read"),
        "mcp-resource": call("counter__read"),
        "memory": call("memory", command="view", path=MEMORY_COUNTER),
        "code": call("run_code", code=f"print(shell(command='cat {COUNTER}'))"),
        "code-mcp": call("run_code", code="print(counter__read())"),
    }.get(cell.writes, call("shell", command=f"cat {COUNTER}"))
    writes = (
        [program(cell, steps)] if cell.writes in ("code", "code-mcp") else [write(cell, i) for i in range(1, steps + 1)]
    )
    agent = [*writes, read, call("submit", answer="done")]
    if cell.context == "overflowing":
        return summaries_where_asked(cell, agent, out)
    replies = []
    for step, reply in enumerate(agent, 1):
        replies.append(reply)
        if cell.context == "compacting" and step % 3 == 0 and step < len(agent):
            replies.append({"text": MEMORY})
    return replies


def summaries_where_asked(cell: Cell, agent: list[dict], out: Path) -> list[dict]:
    """The replies a run of the cell gets, in order: it runs once in-process, each summary request answered
    as it comes, for the script a killed run is resumed with."""
    model = SummarisingModel(
        [ScriptedReply.model_validate(r) for r in agent], WorkingMemory.model_validate_json(MEMORY)
    )
    with tempfile.TemporaryDirectory() as tmp:
        start(RunSpec(task(cell), model, policy(cell, out), Path(tmp), sandbox=SandboxSpec.parse(cell.sandbox)))
    return [r.model_dump(exclude_none=True) for r in model.replies]


class PromptLoggingModel(ScriptedModel):
    """The scripted model, logging a digest of every prompt it is sent, by reply index; a slow one waits `wait_s`
    before it answers (the reply is the script's whatever the wait), and one aimed at (`dies_at`: a reply's number
    in the run, `stop`: how) stops its own process halfway through that wait."""

    log: Path
    wait_s: float = 0.0
    dies_at: int | None = None
    stop: signal.Signals = signal.SIGKILL

    def complete(self, messages, tools, params):
        digest = hashlib.sha256(json.dumps([m.model_dump(mode="json") for m in messages]).encode()).hexdigest()
        with open(self.log, "a") as f:
            f.write(json.dumps({"index": self.calls, "prompt": digest}) + "\n")
        time.sleep(self.wait_s / 2)
        if self.calls + 1 == self.dies_at:
            os.kill(os.getpid(), self.stop)  # a signal's handler ends this call: it raises out of the wait
        time.sleep(self.wait_s / 2)
        return super().complete(messages, tools, params)


def model(out: Path) -> PromptLoggingModel:
    scripted = PromptLoggingModel.from_file(out / "script.json")
    scripted.log = out / "prompts.jsonl"
    if (out / "model.json").exists():
        scripted.wait_s = json.loads((out / "model.json").read_text())["wait_s"]
    kind, count, *stop = os.environ.get(DIE_AFTER, "::").split(":")
    if kind == ASKING:
        scripted.dies_at = int(count)
        scripted.stop = signal.Signals[f"SIG{stop[0]}"] if stop else signal.SIGKILL
    return scripted


def start_run(out: Path, steps: int, cell: Cell) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "script.json").write_text(json.dumps(script(cell, steps, out)))
    (out / "model.json").write_text(json.dumps({"wait_s": MODEL_WAIT_S if cell.model == "slow" else 0.0}))
    if cell.fork:  # the parent runs uninterrupted first; the kills are for the fork
        parent = ScriptedModel.from_file(out / "script.json")
        # Every parent has one id: a fork's prompts may name its parent (its memory entries do), and forks of
        # different parents are compared.
        parent_spec = RunSpec(
            task(cell),
            parent,
            policy(cell, out),
            out / "parent",
            SandboxSpec.parse(cell.sandbox),
            run_id="crash-parent",
        )
        _, parent_dir = start(parent_spec)
        print("ready", flush=True)
        fork(parent_dir, FORK_AT, fork_policy(cell, out), model(out), out=out / "runs", listeners=dying(()))
        return
    print("ready", flush=True)
    start(
        RunSpec(
            task(cell),
            model(out),
            policy(cell, out),
            out / "runs",
            sandbox=SandboxSpec.parse(cell.sandbox),
            listeners=dying(()),
            run_id="crash-run" if one_folder(cell) else None,
            prompt=("counter:count", {"upto": str(steps)}) if cell.writes == "mcp-resource" else None,
        )
    )


def resume_run(run_dir: Path) -> None:
    print("ready", flush=True)
    began = time.perf_counter()

    def timed(event) -> None:
        if isinstance(event, RunResumed):
            print(f"resumed_in {time.perf_counter() - began:.3f}", flush=True)

    done = resume(run_dir, model=model(run_dir.parent.parent), listeners=(timed, *dying(read_events(run_dir))))
    for note in done.notes:
        print("note:", note, flush=True)


def dying(journaled: Sequence[Event]) -> tuple[Callable[[Event], None], ...]:
    """A journal listener that SIGKILLs this process once the journal holds the events DIE_AFTER names
    (`journaled`: those it held when the process began), or sends it the signal DIE_AFTER names; or none."""
    aim = os.environ.get(DIE_AFTER)
    if not aim:
        return ()
    kind, count, *stop = aim.split(":")
    if kind == REBUILD:
        _dying_in_rebuild(int(count))
        return ()
    if kind == ASKING:  # the model stops the process itself (model())
        return ()
    if kind == OPENING:
        _dying_in_opening()
        return ()
    seen = [sum(e.type == kind for e in journaled)]

    def listener(event: Event) -> None:
        seen[0] += event.type == kind
        if seen[0] == int(count):
            os.kill(os.getpid(), signal.Signals[f"SIG{stop[0]}"] if stop else signal.SIGKILL)

    return (listener,)


def _dying_in_rebuild(count: int) -> None:
    """SIGKILL this process once a fork's branch has run `count` of its parent's writes again (agent.rebuild)."""
    done = [0]
    again = rebuild.run_again

    def run_again(*args, **kwargs):
        result = again(*args, **kwargs)
        done[0] += 1
        if done[0] == count:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    rebuild.run_again = run_again


def _dying_in_opening() -> None:
    """SIGKILL this process as its run is opened, once the task is made (from its MCP prompt, with its repository
    map), before the opening is journaled (agent.session.opening)."""
    made = session.with_repo_map

    def with_repo_map(*args, **kwargs):
        made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    session.with_repo_map = with_repo_map


@dataclass
class Torture:
    kills: int = 0
    runs: list[Path] = field(default_factory=list)  # finished run directories
    processes: int = 0
    resume_s: list[float] = field(default_factory=list)  # each resume that got as far as its run_resumed event


def run_once(cell: Cell, out: Path, steps: int) -> tuple[Path, float]:
    """An uninterrupted run in a subprocess, as the killed ones run: its directory and wall time from `ready`."""
    at = folder(cell, out)
    proc = subprocess.Popen(
        driver("start", str(at), str(steps), cell.name),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    proc.stdout.readline()
    began = time.perf_counter()
    output = proc.communicate()[0]
    took = time.perf_counter() - began
    if proc.returncode != 0 or _run_dir(at) is None:
        raise AssertionError(f"the uninterrupted {cell.name} run failed ({proc.returncode}):\n{output}")
    return moved(at, out), took


def one_folder(cell: Cell) -> bool:
    """Whether the cell's runs are made in one folder, under one run id (folder())."""
    return (cell.sandbox, cell.writes) == ("local", "search")


def folder(cell: Cell, out: Path) -> Path:
    """Where a run of the cell is made: `out`, or for the local search cell one folder for all its runs in turn, each
    moved to its `out` once finished (moved()), under one run id: its tools name the workspace's path, which must be
    the same."""
    if not one_folder(cell):
        return out
    at = Path(tempfile.gettempdir()) / "crash-local-search"
    shutil.rmtree(at, ignore_errors=True)
    return at


def moved(at: Path, out: Path) -> Path:
    """The finished run made under `at`, moved to `out` where they differ: its directory."""
    if at != out:
        shutil.move(at, out)
    found = _run_dir(out)
    assert found is not None
    return found


def torture(root: Path, cell: Cell, kills: int, steps: int, seed: int, window_s: float) -> Torture:
    """Start runs and SIGKILL them (or send the cell's signal) at random moments (uniform over `window_s` after `ready`), resuming
    each until it finishes, until `kills` kills have landed on a live process. In a cell with AIMS the
    processes take turns: each aim in order (the process dies, or gets the cell's signal, right after the
    journal's next event or the one after of that type), then a random moment."""
    rng = random.Random(seed)
    stats = Torture()
    turns = [
        *AIMS.get(cell.context, ()),
        *AIMS.get(cell.writes, ()),
        *(AIMS["fork"] if cell.fork else ()),
        *AIMS.get(cell.model, ()),
        *AIMS.get(cell.stop, ()),
        None,
    ]
    while stats.kills < kills:
        out = root / f"run{len(stats.runs)}"
        at = folder(cell, out)
        run_dir, clean_exits = None, 0
        while True:
            args = ["resume", str(run_dir)] if run_dir is not None else ["start", str(at), str(steps), cell.name]
            aim = turns[stats.processes % len(turns)] if stats.kills < kills else None
            env = dict(os.environ)
            if aim is not None:
                journaled = _journaled(run_dir, aim) if run_dir is not None else 0
                env[DIE_AFTER] = f"{aim}:{journaled + rng.randint(1, 2)}" + (
                    "" if cell.stop == "KILL" else f":{cell.stop}"
                )
            proc = subprocess.Popen(
                driver(*args), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            stats.processes += 1
            proc.stdout.readline()  # "ready": the harness is about to act
            if aim is None:
                time.sleep(rng.uniform(0, window_s))
                if stats.kills < kills and proc.poll() is None:
                    proc.send_signal(cell.signal)
            output = proc.communicate()[0]
            # Killed; or stopped by the signal with its stop and summary written (it exits as a shell reports it);
            # or the signal came as the process was exiting, its handler given back: killed by it at the last moment
            killed = proc.returncode in (-signal.SIGKILL, -cell.signal, 128 + cell.signal)
            stats.kills += killed
            stats.resume_s += [float(m) for m in re.findall(r"^resumed_in (\S+)$", output, re.MULTILINE)]
            run_dir = run_dir or _run_dir(at)
            if killed:
                continue
            if proc.returncode != 0:
                raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{output}")
            clean_exits += 1
            stop = last_stop(run_dir)
            if stop is None and clean_exits < 3:  # finished just as the kill quota ran out: one more resume
                continue
            # A run left awaiting approval or stopped by an error counts as finished but differs (see problems).
            stats.runs.append(moved(at, out))
            break
    return stats


def _journaled(run_dir: Path, aim: str) -> int:
    """The events of type `aim` the run's journal holds; for ASKING, the replies the model gave (the agent's and the
    summariser's, as a resume counts them for the scripted model)."""
    events = read_events(run_dir)
    if aim == OPENING:
        return 0
    return fold(events).model_replies if aim == ASKING else sum(e.type == aim for e in events)


def driver(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.agent.recovery.crash_driver", *args]


def last_stop(run_dir: Path) -> RunStopped | None:
    return next((e for e in reversed(read_events(run_dir)) if isinstance(e, RunStopped)), None)


def counter(run_dir: Path) -> list[int]:
    """The counter's values as the run's last step read them back."""
    reads = [
        e.observation
        for e in read_events(run_dir)
        if isinstance(e, ToolObserved) and e.observation.tool in ("shell", "counter__read", "memory", "run_code")
    ]
    if not reads:
        return []
    if reads[-1].tool == "memory":  # a view: line numbers, a tab, the line
        return [int(v) for v in re.findall(r"^\s*\d+\t(\d+)$", reads[-1].text, re.MULTILINE)]
    text = reads[-1].text.split("\n[calls:")[0]  # a program's printed output, without the account after it
    return [int(v) for v in re.findall(r"^\d+$", text.replace(" ", "\n"), re.MULTILINE)]


def duplicated(run_dir: Path) -> int:
    """Writes applied more than once: repeated counter values, and calls (a program's too) observed more than once."""
    observed = Counter(
        e.observation.call_id for e in read_events(run_dir) if isinstance(e, ToolObserved | InnerObserved)
    )
    return sum(n - 1 for n in Counter(counter(run_dir)).values()) + sum(n - 1 for n in observed.values())


def lost(run_dir: Path, reference: Path) -> int:
    """Steps of the uninterrupted run missing here: values missing from the counter, or steps never replied."""
    steps = {e.step for e in read_events(run_dir) if isinstance(e, ModelReplied)}
    want = {e.step for e in read_events(reference) if isinstance(e, ModelReplied)}
    return len(set(counter(reference)) - set(counter(run_dir))) + len(want - steps)


def problems(run_dir: Path, reference: Path) -> list[str]:
    """How a killed-and-resumed run differs from the uninterrupted `reference` run; [] when it does not."""
    found = []
    stop, want = last_stop(run_dir), last_stop(reference)
    if stop is None or stop.reason in RESUMABLE or (stop.reason, stop.step) != (want.reason, want.step):
        found.append(
            f"stopped {stop.reason if stop else 'never'} after step {stop.step if stop else '?'}, "
            f"not {want.reason} after step {want.step}"
        )
    if counter(run_dir) != counter(reference):
        found.append(f"the counter reads {counter(run_dir)}, not {counter(reference)}")
    for name in (f"workspace/{COUNTER}", f"../../{MCP_COUNTER}"):
        mine, theirs = run_dir / name, reference / name
        if theirs.exists() and (not mine.exists() or mine.read_bytes() != theirs.read_bytes()):
            found.append(f"{name} differs from the uninterrupted run's")
    if on_disk(run_dir / "memories") != on_disk(reference / "memories"):
        found.append("the memory store's files differ from the uninterrupted run's")
    if memory_written(run_dir) != memory_written(reference):
        found.append("the memory entries differ from the uninterrupted run's")
    if conversation(run_dir) != conversation(reference):
        found.append("the conversation in the journal differs")
    if inner_calls(run_dir) != inner_calls(reference):
        found.append("the calls the programs made differ from the uninterrupted run's")
    events = read_events(run_dir)
    # As a replay compares them: every prompt's figures, fold and overflow recovery. (Not the write intents: a
    # write a kill cut short journals its intent again when it runs again.)
    reshaped = compare_harness(reshaping(reference), reshaping(run_dir))
    if reshaped:
        found.append(f"{reshaped[0].what} at step {reshaped[0].step}, as a replay compares the journal")
    if [e.seq for e in events] != list(range(1, len(events) + 1)):
        found.append("event seqs are not 1, 2, 3, ...")
    observed = Counter(e.observation.call_id for e in events if isinstance(e, ToolObserved | InnerObserved))
    if any(n != 1 for n in observed.values()):
        found.append(f"calls observed more than once: {[c for c, n in observed.items() if n != 1]}")
    logged, wanted = (
        prompt_log(run_dir.parent.parent),
        {p["index"]: p["prompt"] for p in prompt_log(reference.parent.parent)},
    )
    if {p["index"] for p in logged} != set(wanted) or any(p["prompt"] != wanted[p["index"]] for p in logged):
        found.append("a prompt differs from the uninterrupted run's")
    return found


def memory_written(run_dir: Path) -> list[dict]:
    """The memory entries a run journaled, as a replay compares them (ids without the run's), without their
    times: a resumed run writes its later entries later."""
    return [
        {
            **memory_as_compared(e),
            "entries": [{k: v for k, v in x.items() if k != "at"} for x in memory_as_compared(e)["entries"]],
        }
        for e in read_events(run_dir)
        if isinstance(e, MemoryWritten)
    ]


def reshaping(run_dir: Path) -> list[Event]:
    """The replies' prompts and what changed them: compactions and overflow recoveries."""
    kinds = (ModelReplied, Compacted, ContextOverflowed)
    return [e for e in read_events(run_dir) if isinstance(e, kinds)]


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


def inner_calls(run_dir: Path) -> list[tuple]:
    """The calls the run's programs made, in order, as the journal records them."""
    return [
        (e.observation.call_id, e.arguments, e.observation.status, e.observation.text)
        for e in read_events(run_dir)
        if isinstance(e, InnerObserved)
    ]


def prompt_log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]


def kills_inside_tools(run_dir: Path) -> int:
    """Resumes that found a write cut short while it ran."""
    return sum(
        "was running when its process stopped" in n
        for e in read_events(run_dir)
        if isinstance(e, RunResumed)
        for n in e.notes
    )


def kills_in_model_calls(run_dir: Path) -> int:
    """Model calls the run's processes were stopped in: replies asked for again (a prompt logged twice for one
    reply index), as the resume asks again the call a stopped process left unanswered."""
    asked = Counter(p["index"] for p in prompt_log(run_dir.parent.parent))
    return sum(n - 1 for n in asked.values())


def kills_in_openings(run_dir: Path) -> int:
    """Resumes of a run whose process died while the run was opened: it began again."""
    return sum(isinstance(e, RunResumed) and any("had not begun" in n for n in e.notes) for e in read_events(run_dir))


def kills_in_branches(run_dir: Path) -> int:
    """Resumes of a fork whose process died while it built its branch (ran its parent's writes again)."""
    return sum(
        isinstance(e, RunResumed) and any("branch was not built" in n for n in e.notes) for e in read_events(run_dir)
    )


def kills_after_branches(run_dir: Path) -> int:
    """Resumes of a fork whose process died in its own steps, once its branch was built."""
    events = read_events(run_dir)
    built = next((i for i, e in enumerate(events) if e.type == "forked"), len(events))
    return sum(isinstance(e, RunResumed) for e in events[built:])


def kills_in_recoveries(run_dir: Path) -> int:
    """Resumes of a process that died right after a summariser's reply or an overflow recovery: inside a
    fold, or between a step's recovery and its model call."""
    events = read_events(run_dir)
    return sum(
        isinstance(e, RunResumed) and isinstance(before, (SummaryReplied, ContextOverflowed))
        for before, e in zip(events, events[1:], strict=False)
    )


def replay_divergences(run_dir: Path, out: Path) -> int | None:
    """Harness divergences of a replay of a resumed run (each life of it replayed, its recovery too: a replay that
    falls out of step, or reaches another stop, counts one more); None for a run that was never resumed."""
    if not any(isinstance(e, RunResumed) for e in read_events(run_dir)):
        return None
    report = replay(run_dir, out=out)
    return len(report.harness) + len(report.notes) + (report.replayed_stop != report.recorded_stop)


def containers_left(root: Path) -> int:
    """Containers of runs under `root` that are still there."""
    import docker

    from sandboxes.docker_options import RUN_LABEL

    prefix = str(root.resolve())
    found = docker.from_env().containers.list(all=True, filters={"label": RUN_LABEL}, ignore_removed=True)
    return sum(c.labels.get(RUN_LABEL, "").startswith(prefix) for c in found)


def _run_dir(out: Path) -> Path | None:
    """The run's directory once it has a run.json (a start killed earlier than that left nothing to resume)."""
    made = (d for d in (out / "runs").glob("*") if not d.name.startswith(".") and (d / "run.json").exists())
    return next(made, None)  # (a fork is made in a hidden folder, then renamed into place)


if __name__ == "__main__":
    with signals_handled():  # from before `ready`, as `harness run` and `harness resume` do
        try:
            if sys.argv[1] == "start":
                start_run(Path(sys.argv[2]), int(sys.argv[3]), Cell.parse(sys.argv[4]))
            else:
                resume_run(Path(sys.argv[2]))
        except Abandoned:  # stopped while its sandbox was started or found again, as `harness resume` says it
            pass
        stopped = requested()
    sys.exit(EXIT_CODES[stopped] if stopped else 0)
