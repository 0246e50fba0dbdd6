"""A fork stopped before its branch (SIGTERM while `harness fork` rebuilt its world) is branched by the resume that
takes it up, and that resume goes on as any other: compaction asks the summariser its caller gave, memory entries
are dated by its caller's clock, and the fork replays with no divergence (a replay resumes it with the recorded
summaries and times).

Real files, the local sandbox, scripted models (tests/agent/forking.py); the stop is asked for as a signal asks it
(core.interrupts), so the fork's branch stops while it runs the task's setup again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.fork import fork
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.resume import resume
from agent.session import RunSpec, start
from core.context_policy import Compact
from core.events import Forked, MemoryWritten, SummaryReplied
from core.interrupts import Abandoned, clear, request
from core.policy import HarnessPolicy, StopPolicy
from core.presets import memory_on
from memory.summariser import ModelSummariser
from tests.agent import forking
from tests.agent.helpers import call

POLICY = memory_on(
    HarnessPolicy(
        name="fold",
        stop=StopPolicy(max_steps=20),
        context=[Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9)],
    )
)
SUMMARY = ScriptedReply(text=forking.MEMORY)  # a summariser's reply: after steps 2 and 4
PARENT = [
    call("memory", command="create", path="/memories/notes.md", file_text="v1\n"),
    call("shell", command="echo x > a.txt"),
    SUMMARY,
    call("shell", command="cat a.txt"),
    call("memory", command="view", path="/memories/notes.md"),
    SUMMARY,
    call("submit", answer="done"),
]
AT_STEP = 2
OWN = [  # the fork's own steps: a memory write, then a compaction after its step 4
    call("memory", command="create", path="/memories/fork.md", file_text="mine\n"),
    call("memory", command="view", path="/memories/fork.md"),
    call("submit", answer="forked"),
]
DATED = 1_700_000_000.0


def unbranched_fork(tmp_path: Path) -> Path:
    """A fork of a finished parent at step 2, its process stopped by SIGTERM before the branch was built."""
    done, parent = start(RunSpec(forking.TASK, ScriptedModel(PARENT), POLICY, tmp_path, run_id="parent"))
    assert done.stop_reason == "submitted"
    request("SIGTERM")
    try:
        with pytest.raises(Abandoned):
            fork(parent, AT_STEP, model=ScriptedModel([*PARENT[:3], *OWN]), out=tmp_path / "forks")
    finally:
        clear()
    [run_dir] = list((tmp_path / "forks").iterdir())
    assert not any(isinstance(e, Forked) for e in read_events(run_dir))
    return run_dir


def test_a_fork_stopped_before_its_branch_resumes_with_its_callers_summariser_and_clock(tmp_path):
    run_dir = unbranched_fork(tmp_path)
    summariser = ScriptedModel([SUMMARY])
    done = resume(
        run_dir,
        model=ScriptedModel([*PARENT[:3], *OWN]),  # the agent's replies only: summaries are the summariser's
        summariser=ModelSummariser(summariser, POLICY.model),
        clock=lambda: DATED,
    )
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert summariser.calls == 1
    events = read_events(run_dir)
    at = next(i for i, e in enumerate(events) if isinstance(e, Forked))
    [summarised] = [e for e in events[at:] if isinstance(e, SummaryReplied)]
    assert summarised.reply is not None and summarised.reply.message.text == forking.MEMORY
    own = [entry for e in events[at:] if isinstance(e, MemoryWritten) for entry in e.entries]
    assert [(entry.path, entry.at) for entry in own] == [("/memories/fork.md", DATED)]


def test_a_fork_stopped_before_its_branch_then_resumed_replays_with_no_divergence(tmp_path):
    run_dir = unbranched_fork(tmp_path)
    done = resume(run_dir, model=ScriptedModel([*PARENT[:3], *OWN[:2], SUMMARY, OWN[2]]))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    report = replay(run_dir, out=tmp_path / "replays")
    assert (report.harness, report.replayed_stop) == ([], "submitted"), [(d.step, d.what) for d in report.harness]
