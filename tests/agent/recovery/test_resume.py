"""Resume: after an approval stop, an interrupt inside a tool, a damaged journal or a bad snapshot.

In-process runs with real files and the local sandbox. An interrupt inside a tool is
a real KeyboardInterrupt raised while the tool runs (after or before its effect): the
loop stops with `interrupted`, leaving the write-ahead intent without a result, just
as a kill -9 would (test_crash.py does that part with real SIGKILLs).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recovery.approval import record_decision
from agent.recovery.reconcile import NOT_RERUN, UNKNOWN
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.events import ModelReplied, RunResumed, ToolObserved
from core.interrupts import clear, request
from core.policy import ApprovalPolicy, CheckpointPolicy, DispatchPolicy, HarnessPolicy, StopPolicy
from tests.agent import slow_counter
from tests.agent.helpers import GATED_WRITE, WRITE_READ_SUBMIT, call, calls
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult
from tools.builtin import STANDARD

TASK = Task(prompt="Make a.txt, look at it, submit.")


class RecordingModel(ScriptedModel):
    """The scripted model, keeping every prompt it is sent, exactly as JSON."""

    def __init__(self, replies, prompts: list[str]):
        super().__init__(replies)
        self.prompts = prompts

    def complete(self, messages, tools, params):
        self.prompts.append(json.dumps([m.model_dump(mode="json") for m in messages]))
        return super().complete(messages, tools, params)


def uninterrupted(tmp_path, script=WRITE_READ_SUBMIT, tools=None, policy=HarnessPolicy()):
    prompts: list[str] = []
    summary, run_dir = start(
        RunSpec(TASK, RecordingModel(script, prompts), policy, tmp_path / "reference", tools=tools)
    )
    return prompts, summary, run_dir


def history(run_dir):
    return [
        (type(e).__name__, e.model_dump(exclude={"seq", "ts"}, mode="json"))
        for e in read_events(run_dir)
        if type(e).__name__ in ("MessageAdded", "ModelReplied")
    ] + [
        e.observation.model_dump(include={"call_id", "status", "text"})
        for e in read_events(run_dir)
        if isinstance(e, ToolObserved)
    ]


def test_an_approval_stop_writes_a_snapshot_and_the_resumed_prompts_are_byte_identical(tmp_path):
    want, want_summary, reference = uninterrupted(tmp_path)
    prompts: list[str] = []
    summary, run_dir = start(RunSpec(TASK, RecordingModel(WRITE_READ_SUBMIT, prompts), GATED_WRITE, tmp_path / "gated"))
    assert summary.stop_reason == "awaiting_approval" and summary.outcome == {"pending": ["call_2_0"]}
    snap = json.loads((run_dir / "snapshot.json").read_text())
    assert snap["stop"] == "awaiting_approval" and snap["pending"] == ["call_2_0"] and snap["state"]["step"] == 2

    record_decision(run_dir, "call_2_0", True)
    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    assert done.summary.stop_reason == "submitted" and done.summary.steps == want_summary.steps
    assert prompts == want  # every prompt, before and after the stop, byte for byte
    assert history(run_dir) == history(reference)
    assert (run_dir / "workspace" / "a.txt").read_text() == "A\n"


def test_a_refusal_is_a_denied_observation_with_the_note_and_the_model_sees_it(tmp_path):
    prompts: list[str] = []
    _, run_dir = start(RunSpec(TASK, RecordingModel(WRITE_READ_SUBMIT, prompts), GATED_WRITE, tmp_path))
    record_decision(run_dir, "call_2_0", False, "write b.txt instead")
    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    denied = [e.observation for e in read_events(run_dir) if isinstance(e, ToolObserved)][1]
    assert denied.status == "denied" and not denied.executed
    assert denied.text == "Not run: the user refused the call to write_file. Their note: write b.txt instead"
    assert denied.text in prompts[2] and not (run_dir / "workspace" / "a.txt").exists()
    assert done.summary.errors == {"denied": 1, "nonzero_exit": 1}


def test_approve_refuses_a_call_the_run_does_not_wait_on(tmp_path):
    _, run_dir = start(RunSpec(TASK, ScriptedModel(WRITE_READ_SUBMIT), GATED_WRITE, tmp_path))
    runner = CliRunner()
    wrong = runner.invoke(app, ["approve", str(run_dir), "--call", "call_9_9", "--yes"])
    assert wrong.exit_code == 2 and "waits on: call_2_0" in " ".join(wrong.output.split())
    undecided = runner.invoke(app, ["approve", str(run_dir), "--call", "call_2_0"])
    assert undecided.exit_code == 2 and "--yes" in undecided.output
    ok = runner.invoke(app, ["approve", str(run_dir), "--call", "call_2_0", "--yes"])
    assert ok.exit_code == 0 and "harness resume" in ok.output
    again = runner.invoke(app, ["approve", str(run_dir), "--call", "call_2_0", "--no"])
    assert again.exit_code == 2 and "waits on no call" in " ".join(again.output.split())


def interrupting(tool: Tool, when: str) -> Tool:
    """`tool`, but its first run is interrupted (Ctrl-C) before or after its effect."""
    fired = []

    def run(args, ctx):
        if not fired and when == "before":
            fired.append(1)
            raise KeyboardInterrupt
        result = tool.run(args, ctx)
        if not fired:
            fired.append(1)
            raise KeyboardInterrupt
        return result

    return replace(tool, run=run)


APPEND_SCRIPT = [call("append", value=v) for v in (1, 2, 3)] + [call("submit", answer="done")]


def counter_tools(append: Tool) -> Registry:
    return Registry.of([append, slow_counter.READ, *[t for t in STANDARD if t.name == "submit"]])


@pytest.mark.parametrize("when", ["after", "before"])
def test_an_interrupted_write_with_its_own_check_is_settled_and_never_applied_twice(tmp_path, when):
    want, _, reference = uninterrupted(tmp_path, APPEND_SCRIPT, counter_tools(slow_counter.APPEND))
    prompts: list[str] = []
    summary, run_dir = start(
        RunSpec(
            TASK,
            RecordingModel(APPEND_SCRIPT, prompts),
            HarnessPolicy(),
            tmp_path / "cut",
            tools=counter_tools(interrupting(slow_counter.APPEND, when)),
        )
    )
    assert summary.stop_reason == "interrupted"
    done = resume(run_dir, model=RecordingModel(APPEND_SCRIPT, prompts), tools=counter_tools(slow_counter.APPEND))
    assert done.summary.stop_reason == "submitted"
    assert (run_dir / "workspace" / "counter.txt").read_text() == (reference / "workspace" / "counter.txt").read_text()
    assert prompts == want and history(run_dir) == history(reference)
    assert any("was running when its process stopped" in n for n in done.notes)


class LineArgs(BaseModel):
    value: int


def blind_append(args: LineArgs, ctx: ToolContext) -> ToolResult:
    with open(Path(ctx.sandbox.workdir, "log.txt"), "a") as f:
        f.write(f"{args.value}\n")
    return ToolResult(f"appended {args.value}")


BLIND = Tool(
    "append",
    "Append a line.",
    "Append a line; it cannot tell whether it already did.",
    LineArgs,
    Effect.WRITE,
    blind_append,
)


@pytest.mark.parametrize(
    "rule, lines, status", [("unknown", "1\n", "error"), ("rerun", "1\n1\n", "ok"), ("ask", "1\n", "denied")]
)
def test_an_interrupted_write_without_a_check_follows_the_policy(tmp_path, rule, lines, status):
    policy = HarnessPolicy(checkpoint=CheckpointPolicy(interrupted_writes=rule))
    script = [call("append", value=1), call("submit", answer="done")]
    _, run_dir = start(
        RunSpec(TASK, ScriptedModel(script), policy, tmp_path, tools=counter_tools(interrupting(BLIND, "after")))
    )
    done = resume(run_dir, model=ScriptedModel(script), tools=counter_tools(BLIND))
    if rule == "ask":
        assert done.summary.stop_reason == "awaiting_approval" and done.summary.outcome == {"pending": ["call_1_0"]}
        record_decision(run_dir, "call_1_0", False, "I will check by hand")
        done = resume(run_dir, model=ScriptedModel(script), tools=counter_tools(BLIND))
    assert done.summary.stop_reason == "submitted"
    assert (run_dir / "workspace" / "log.txt").read_text() == lines
    [obs] = [
        e.observation for e in read_events(run_dir) if isinstance(e, ToolObserved) and e.observation.tool == "append"
    ]
    assert obs.status == status
    if rule == "unknown":
        assert obs.error_kind == "interrupted" and obs.text == UNKNOWN.format(tool="append", id="call_1_0")
    if rule == "ask":
        assert obs.text == NOT_RERUN.format(tool="append", id="call_1_0") + " Their note: I will check by hand"


def test_a_reply_cut_short_mid_dispatch_is_finished_without_asking_the_model_again(tmp_path):
    script = [
        calls(("read_counter", {}), ("append", {"value": 1}), ("read_counter", {})),
        call("submit", answer="done"),
    ]
    policy = HarnessPolicy(dispatch=DispatchPolicy(parallel="all"))
    want, _, reference = uninterrupted(tmp_path, script, counter_tools(slow_counter.APPEND), policy)
    prompts: list[str] = []
    reads = []  # interrupt inside the reply's second read: its first read and the append already have results

    def second_read_interrupts(args, ctx):
        reads.append(1)
        if len(reads) == 2:
            raise KeyboardInterrupt
        return slow_counter.read_counter(args, ctx)

    tools = counter_tools(slow_counter.APPEND)
    tools.tools["read_counter"] = replace(slow_counter.READ, run=second_read_interrupts)
    summary, run_dir = start(RunSpec(TASK, RecordingModel(script, prompts), policy, tmp_path / "cut", tools=tools))
    assert summary.stop_reason == "interrupted"
    done = resume(run_dir, model=RecordingModel(script, prompts), tools=counter_tools(slow_counter.APPEND))
    assert done.summary.stop_reason == "submitted"
    events = read_events(run_dir)
    assert sum(isinstance(e, ModelReplied) for e in events) == 2  # the cut step's reply was not asked for again
    assert [e.observation.call_id for e in events if isinstance(e, ToolObserved)] == [
        "call_1_0",
        "call_1_1",
        "call_1_2",
        "call_2_0",
    ]
    assert prompts == want and history(run_dir) == history(reference)
    assert (run_dir / "workspace" / "counter.txt").read_text() == (reference / "workspace" / "counter.txt").read_text()


def test_a_torn_last_line_and_a_missing_snapshot_are_reported_and_nothing_earlier_is_lost(tmp_path):
    want, _, reference = uninterrupted(tmp_path)
    prompts: list[str] = []
    _, run_dir = start(RunSpec(TASK, RecordingModel(WRITE_READ_SUBMIT, prompts), GATED_WRITE, tmp_path / "torn"))
    journal = run_dir / "events.jsonl"
    before = journal.read_bytes()
    with open(journal, "ab") as f:
        f.write(b'{"seq": 8, "ts": 1.0, "step": 2, "type": "tool_obs')  # a crash mid-write
    (run_dir / "snapshot.json").unlink()
    record_decision(run_dir, "call_2_0", True)
    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    assert any("line 8 is torn (cut short mid-write)" in n for n in done.notes) and any(
        "no snapshot.json" in n for n in done.notes
    )
    assert done.summary.stop_reason == "submitted" and prompts == want
    lines = journal.read_bytes().splitlines(keepends=True)
    assert b"".join(lines).startswith(before)  # every earlier event, byte for byte
    assert lines[7].startswith(b'{"seq": 8, "ts": 1.0') and lines[7].endswith(b"\n")  # new events start on a fresh line
    assert len(read_events(run_dir)) == len(lines) - 1
    assert [e.seq for e in read_events(run_dir)] == list(range(1, len(lines)))
    assert history(run_dir) == history(reference)


def test_a_snapshot_that_disagrees_with_the_journal_is_ignored(tmp_path):
    want, _, _ = uninterrupted(tmp_path)
    prompts: list[str] = []
    _, run_dir = start(RunSpec(TASK, RecordingModel(WRITE_READ_SUBMIT, prompts), GATED_WRITE, tmp_path / "bad"))
    snap = json.loads((run_dir / "snapshot.json").read_text())
    snap["window"][-1]["text"] = "something the journal never said"
    (run_dir / "snapshot.json").write_text(json.dumps(snap))
    record_decision(run_dir, "call_2_0", True)
    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    assert any("does not match the journal" in n for n in done.notes)
    assert done.summary.stop_reason == "submitted" and prompts == want
    [resumed] = [e for e in read_events(run_dir) if isinstance(e, RunResumed)]
    assert resumed.from_seq == 0


def test_a_finished_run_is_left_as_it_is(tmp_path):
    _, _, run_dir = uninterrupted(tmp_path)
    before = (run_dir / "events.jsonl").read_bytes()
    done = resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))
    assert done.summary is None and "already finished (submitted" in done.notes[0]
    assert (run_dir / "events.jsonl").read_bytes() == before


def test_a_sandbox_that_is_gone_is_recreated_from_the_task_and_the_output_says_so(tmp_path):
    task = Task(prompt="x", files={"data.txt": "42\n"})
    replies = [
        call("write_file", path="a.txt", content="A"),
        call("shell", command="cat data.txt"),
        call("submit", answer="42"),
    ]
    _, run_dir = start(RunSpec(task, ScriptedModel(replies), GATED_WRITE, tmp_path))
    shutil.rmtree(run_dir / "workspace")
    record_decision(run_dir, "call_1_0", True)
    done = resume(run_dir, model=ScriptedModel(replies))
    [note] = [n for n in done.notes if "sandbox" in n]
    assert "could not be reconnected, so it was recreated" in note
    assert done.summary.stop_reason == "submitted" and (run_dir / "workspace" / "data.txt").read_text() == "42\n"


def test_harness_run_says_how_to_approve_and_resume_continues(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: write_file, arguments: {path: a.txt, content: A}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    policy = tmp_path / "gated.toml"
    policy.write_text('[approval]\nper_tool = {write_file = "always"}\n')
    runner = CliRunner()
    ran = runner.invoke(
        app,
        [
            "run",
            "--task",
            "Write a.",
            "--model",
            f"scripted:{script}",
            "--policy",
            str(policy),
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    [run_dir] = (tmp_path / "runs").iterdir()
    assert ran.exit_code == 0 and f"harness approve {run_dir} --call call_1_0 --yes" in " ".join(ran.output.split())
    assert runner.invoke(app, ["approve", str(run_dir), "--call", "call_1_0", "--yes"]).exit_code == 0
    resumed = runner.invoke(app, ["resume", str(run_dir)])
    assert resumed.exit_code == 0 and "submitted" in resumed.output
    assert (run_dir / "workspace" / "a.txt").read_text() == "A"


def test_help_lists_resume_replay_and_approve():
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"])
    for command in ("resume", "replay", "approve"):
        assert command in listing.output
        assert runner.invoke(app, [command, "--help"]).exit_code == 0


def test_a_run_killed_between_its_opening_messages_gets_the_rest_on_resume(tmp_path):
    """A kill after the system message was journaled and before the task was: the task must not be lost."""
    want, _, reference = uninterrupted(tmp_path)
    _, run_dir = start(RunSpec(TASK, ScriptedModel(WRITE_READ_SUBMIT), HarnessPolicy(), tmp_path / "early"))
    journal = run_dir / "events.jsonl"
    journal.write_text(journal.read_text().splitlines(keepends=True)[0])  # only the system message survived
    for name in ("snapshot.json", "summary.json"):
        (run_dir / name).unlink()
    prompts: list[str] = []
    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    assert done.summary.stop_reason == "submitted"
    assert history(run_dir) == history(reference) and prompts == want


def test_a_compacted_run_resumes_after_its_summariser_replies(tmp_path):
    """The scripted model serves the summariser too; the resumed model goes on after every reply it gave."""
    from agent.models.scripted import ScriptedReply
    from core.context_policy import Compact
    from core.memory_types import WorkingMemory

    memory = ScriptedReply(text=json.dumps(WorkingMemory(goal="write a.txt").model_dump()))
    script = [
        call("shell", command="echo 1"),
        call("shell", command="echo 2"),
        memory,
        call("write_file", path="a.txt", content="A\n"),
        call("submit", answer="done"),
    ]
    compacting = [Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")]
    want, _, reference = uninterrupted(tmp_path, script=script, policy=HarnessPolicy(context=compacting))
    prompts: list[str] = []
    gated = HarnessPolicy(context=compacting, approval=ApprovalPolicy(per_tool={"write_file": "always"}))
    summary, run_dir = start(RunSpec(TASK, RecordingModel(script, prompts), gated, tmp_path / "gated"))
    assert summary.stop_reason == "awaiting_approval" and summary.compactions == 1
    record_decision(run_dir, "call_4_0", True)  # the fourth reply of the script, after the summary
    done = resume(run_dir, model=RecordingModel(script, prompts))
    assert done.summary.stop_reason == "submitted" and done.summary.compactions == 1
    assert prompts == want and history(run_dir) == history(reference)


def stop_on(kind: str, step: int | None = None):
    """A journal listener that asks the run to stop, as SIGTERM does, once it journals a `kind` event (of `step`)."""

    def listener(event) -> None:
        if event.type == kind and (step is None or event.step == step):
            request("SIGTERM")

    return listener


def test_a_run_stopped_by_signals_between_steps_does_not_do_its_last_step_again(tmp_path):
    """Stopped by a signal right after a step's observation, then by a signal at once on each of three resumes:
    the step that ended before the first stop is not taken again (its repeats counted once, so no_progress does
    not fire), and the run ends as the uninterrupted one."""
    script = [call("shell", command="echo 1"), call("shell", command="echo 1"), *WRITE_READ_SUBMIT]
    want, _, reference = uninterrupted(tmp_path, script)
    prompts: list[str] = []
    try:
        summary, run_dir = start(
            RunSpec(
                TASK,
                RecordingModel(script, prompts),
                HarnessPolicy(),
                tmp_path / "cut",
                listeners=[stop_on("tool_observed", 2)],
            )
        )
        assert summary.stop_reason == "interrupted"
        for _ in range(3):
            clear()
            done = resume(run_dir, model=RecordingModel(script, prompts), listeners=[stop_on("resumed")])
            assert done.summary.stop_reason == "interrupted" and done.notes == []
        clear()
        assert resume(run_dir, model=RecordingModel(script, prompts)).summary.stop_reason == "submitted"
    finally:
        clear()
    assert prompts == want and history(run_dir) == history(reference)


def test_a_run_taken_up_again_twice_counts_the_time_it_worked_not_the_wait_before_each_resume(tmp_path):
    """Stopped with no snapshot (as kill -9 leaves a run before its first), resumed after a wait longer than its
    wall-time budget, stopped and resumed again: the waits are not work, so the run ends as it would have, and its
    wall time is the time it worked."""
    wait = 2.0
    script = [call("shell", command="echo 1"), call("shell", command="echo 2"), *WRITE_READ_SUBMIT]
    policy = HarnessPolicy(stop=StopPolicy(max_wall_s=wait))
    try:
        summary, run_dir = start(
            RunSpec(TASK, ScriptedModel(script), policy, tmp_path, listeners=[stop_on("tool_observed", 1)])
        )
        assert summary.stop_reason == "interrupted"
        (run_dir / "snapshot.json").unlink()
        time.sleep(wait)
        clear()
        done = resume(run_dir, model=ScriptedModel(script), listeners=[stop_on("tool_observed", 2)])
        assert done.summary is not None and done.summary.stop_reason == "interrupted"
        (run_dir / "snapshot.json").unlink()
        clear()
        done = resume(run_dir, model=ScriptedModel(script))
    finally:
        clear()
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert done.summary.wall_s < wait
    assert json.loads((run_dir / "summary.json").read_text())["wall_s"] == done.summary.wall_s


def test_a_local_run_stopped_halfway_through_its_setup_begins_again_in_a_fresh_workspace(tmp_path):
    """A setup that cannot run twice in one folder (`mkdir`, a `git commit` of the task's files) stopped by SIGTERM
    after its first command: the resume begins the run again from the task's files alone, and the setup passes as
    it did in the uninterrupted run."""
    import os

    from agent.recorded.replay import replay
    from core.interrupts import Abandoned, signals_handled

    once = tmp_path / "signalled"  # outside the workspace: the second setup command signals the first time only
    stop_once = f"test -e {once} || {{ touch {once}; kill -TERM {os.getpid()}; sleep 10; }}"
    task = Task(prompt="List the folder, submit.", files={"a.txt": "a\n"}, setup=["mkdir made", stop_once])
    script = [call("shell", command="ls"), call("submit", answer="done")]
    with signals_handled(), pytest.raises(Abandoned):
        start(RunSpec(task, ScriptedModel(script), HarnessPolicy(), tmp_path / "runs"))
    [run_dir] = [d for d in (tmp_path / "runs").iterdir() if d.is_dir()]
    assert (run_dir / "workspace" / "made").is_dir()  # the first setup command ran before the stop

    done = resume(run_dir, model=ScriptedModel(script))
    assert done.summary.stop_reason == "submitted", done.notes
    listed = [e.observation.text for e in read_events(run_dir) if isinstance(e, ToolObserved)][0]
    assert listed.split() == ["a.txt", "made"]
    report = replay(run_dir, out=tmp_path / "replays")
    assert (report.harness, report.notes, report.replayed_stop) == ([], [], "submitted")


def test_a_run_stopped_while_its_setup_ran_begins_again_and_its_resumed_lives_replay(tmp_path):
    """Stopped by a signal while the task's setup ran (nothing of the run begun): the resume runs the setup again
    and journals its `resumed`, as any resume does; stopped again after the first reply, then resumed to the end:
    the setup's file is there, and the replay stops each life where the run did, with no divergence."""
    from agent.recorded.replay import replay
    from core.interrupts import Abandoned, clear, request

    task = Task(prompt="Look at ready.txt, submit.", setup=["sleep 1", "echo ready > ready.txt"])
    script = [call("shell", command="cat ready.txt"), call("submit", answer="done")]

    def stop_on(kind: str):
        return lambda event: request("SIGTERM") if event.type == kind else None

    out = tmp_path / "runs"
    request("SIGTERM")  # arrives while the setup's first command runs
    try:
        with pytest.raises(Abandoned):
            start(RunSpec(task, ScriptedModel(script), HarnessPolicy(), out))
        [run_dir] = [d for d in out.iterdir() if d.is_dir()]
        clear()
        done = resume(run_dir, model=ScriptedModel(script), listeners=[stop_on("model_replied")])
        assert done.summary.stop_reason == "interrupted"
        clear()
        assert resume(run_dir, model=ScriptedModel(script)).summary.stop_reason == "submitted"
    finally:
        clear()
    events = read_events(run_dir)
    assert sum(isinstance(e, RunResumed) for e in events) == 2
    assert [e.observation.text for e in events if isinstance(e, ToolObserved)][0].startswith("ready")
    report = replay(run_dir, out=tmp_path / "replays")
    assert (report.harness, report.notes, report.replayed_stop) == ([], [], "submitted")
