"""Replay separates the harness from the world. By default the recorded replies and the recorded
tool outputs are played back (nothing runs) and every prompt, intent, observation, harness message,
compaction and the stop must be byte-identical: a difference is a harness divergence (exit 1).
With --execute the tools run again, and outputs that changed are reported as the world changing,
after volatile text is normalised, without failing."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.fork import fork
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.recovery.approval import record_decision
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.context_policy import Compact
from core.events import ModelReplied
from core.memory_types import WorkingMemory
from core.policy import ApprovalPolicy, HarnessPolicy
from core.volatile import normalise
from tests.agent.helpers import call

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories"


def test_a_deterministic_run_replays_with_no_divergence_played_back_or_executed(tmp_path):
    task = Task(prompt="x", files={"data.txt": "3\n1\n2\n"}, setup=["echo seeded > seed.txt"])
    replies = [
        call("shell", command="sort data.txt"),
        call("write_file", path="out.txt", content="1 2 3\n"),
        call("shell", command="cat out.txt seed.txt"),
        call("submit", answer="done"),
    ]
    _, run_dir = start(RunSpec(task, ScriptedModel(replies), HarnessPolicy(), tmp_path / "runs"))
    assert all(e.prompt_sha256 for e in read_events(run_dir) if isinstance(e, ModelReplied))

    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.prompts == 4 and report.observations == 4
    assert report.recorded_stop == report.replayed_stop == "submitted"
    assert not (report.replay_dir / "workspace" / "out.txt").exists()  # played back: nothing ran

    executed = replay(run_dir, out=tmp_path / "replays", execute=True)
    assert executed.world == [] and (executed.replay_dir / "workspace" / "out.txt").read_text() == "1 2 3\n"


def test_a_played_back_replay_runs_none_of_the_tasks_setup_nor_a_forks(tmp_path):
    """Played back, nothing runs: not the task's setup either, whose commands act wherever they are told (here a
    file outside the workspace), and a run recorded in a container would have had them run on the host."""
    log = tmp_path / "setup.log"
    task = Task(prompt="x", setup=[f"echo ran >> {log}"])
    replies = [call("shell", command="echo hi"), call("submit", answer="done")]
    _, run_dir = start(RunSpec(task, ScriptedModel(replies), HarnessPolicy(), tmp_path / "runs"))
    made = fork(run_dir, 1, model=ScriptedModel([replies[0], call("submit", answer="forked")]), out=tmp_path / "f")
    assert made.summary is not None and made.summary.stop_reason == "submitted", made.summary
    assert log.read_text() == "ran\nran\n"  # the run's and the fork's own setup

    for recorded in (run_dir, made.run_dir):
        report = replay(recorded, out=tmp_path / "replays")
        assert report.harness == [] and report.replayed_stop == "submitted", report.notes
    assert log.read_text() == "ran\nran\n"


def test_recorded_approval_decisions_are_applied_in_the_replay(tmp_path):
    replies = [call("write_file", path="a.txt", content="A"), call("submit", answer="done")]
    policy = HarnessPolicy(approval=ApprovalPolicy(approve="writes", per_tool={"submit": "never"}))
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path / "runs"))
    record_decision(run_dir, "call_1_0", False, "no")
    resume(run_dir, model=ScriptedModel(replies))
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.replayed_stop == "submitted"


def test_a_run_that_waited_for_approval_of_an_untrusted_servers_write_replays_stopping_there(tmp_path):
    """The server's own setting asks approval (its tools are untrusted), not the policy: the replay's tools, made
    from the run's record, ask where the run's did, so each life ends where the recorded process stopped."""
    from tests.tools.mcp.conftest import stdio

    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py")])  # untrusted: each write waits for a person
    replies = [call("notes__write_note", text="buy milk"), call("submit", answer="done")]
    summary, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path / "runs"))
    assert summary.stop_reason == "awaiting_approval"
    record_decision(run_dir, "call_1_0", True)
    done = resume(run_dir, model=ScriptedModel(replies))
    assert done.summary is not None and done.summary.stop_reason == "submitted"

    report = replay(run_dir, out=tmp_path / "replays")
    assert report.notes == [] and report.harness == [], [d.diff for d in report.harness]
    assert report.replayed_stop == "submitted"


def test_a_run_that_placed_an_mcp_resource_replays_from_the_recorded_opening(tmp_path):
    """Played back, no MCP server starts: what the run placed before its task comes from its recording."""
    from tests.tools.mcp.conftest import stdio

    policy = HarnessPolicy(mcp=[stdio("hostile", "hostile.py")], mcp_resources=["hostile:hostile://inject"])
    replies = [call("shell", command="echo hi"), call("submit", answer="done")]
    summary, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path / "runs"))
    assert summary.stop_reason == "submitted"

    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.replayed_stop == "submitted" and report.prompts == 2
    shown = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "cli")])
    assert shown.exit_code == 0 and "0 harness divergences" in shown.output, shown.output


def test_a_changed_world_is_information_not_a_harness_divergence(tmp_path):
    outside = tmp_path / "world.txt"  # a part of the world the sandbox does not reset
    outside.write_text("alpha\nbeta\n")
    replies = [
        call("shell", command="echo start"),
        call("shell", command=f"cat {outside}"),
        call("submit", answer="done"),
    ]
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), HarnessPolicy(), tmp_path / "runs"))
    outside.write_text("alpha\ngamma\n")

    assert replay(run_dir, out=tmp_path / "replays").harness == []  # the harness did not change
    report = replay(run_dir, out=tmp_path / "replays", execute=True)
    [d] = report.world
    assert (d.step, d.call_id, d.tool, d.what) == (2, "call_2_0", "shell", "output changed")
    assert "-beta\n" in d.diff and "+gamma\n" in d.diff and " alpha\n" in d.diff

    result = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "cli"), "--execute"])
    assert result.exit_code == 0, result.output
    assert "world changed at step 2, call call_2_0 (shell): output changed" in result.output
    assert "+gamma" in result.output and "1 changed in the world" in result.output


def test_ls_la_and_the_date_replay_cleanly(tmp_path):
    replies = [
        call("write_file", path="notes.txt", content="hi\n"),
        call("shell", command="ls -la; date; pwd"),
        call("submit", answer="done"),
    ]
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), HarnessPolicy(), tmp_path / "runs"))
    result = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "replays")])
    assert result.exit_code == 0, result.output
    assert "3 prompts and 3 observations compared, 0 harness divergences" in result.output
    executed = replay(run_dir, out=tmp_path / "replays", execute=True)
    assert executed.world == [], [d.diff for d in executed.world]


def test_a_harness_that_builds_another_prompt_or_observation_is_a_divergence(tmp_path):
    replies = [call("shell", command="seq 1 3000"), call("submit", answer="done")]
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), HarnessPolicy(), tmp_path / "runs"))
    info = json.loads((run_dir / "run.json").read_text())
    info["policy"]["truncation"]["head_chars"] = 1000  # as if the harness now cut outputs differently
    (run_dir / "run.json").write_text(json.dumps(info))

    report = replay(run_dir, out=tmp_path / "replays")
    whats = {(d.step, d.what) for d in report.harness}
    assert (1, "tool_observed differs") in whats and (2, "model_replied differs") in whats
    observed = next(d for d in report.harness if d.what == "tool_observed differs")
    assert observed.call_id == "call_1_0" and '"kept_chars"' in observed.diff

    result = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "cli")])
    assert result.exit_code == 1 and "harness divergence at step 1, call call_1_0 (shell)" in result.output


def test_a_compacted_run_replays_with_no_harness_divergence(tmp_path):
    memory = WorkingMemory(goal="count", plan=["echo each number"])
    summary = ScriptedReply(text=json.dumps(memory.model_dump()))
    replies = [
        call("shell", command="echo 1"),
        call("shell", command="echo 2"),
        summary,
        call("shell", command="echo 3"),
        call("shell", command="echo 4"),
        summary,
        call("submit", answer="done"),
    ]
    policy = HarnessPolicy(
        context=[Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")]
    )
    result, run_dir = start(RunSpec(Task(prompt="count"), ScriptedModel(replies), policy, tmp_path / "runs"))
    assert result.compactions == 2 and result.stop_reason == "submitted"
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.replayed_stop == "submitted"


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_fixture_run_replays_with_no_harness_divergence(tmp_path, monkeypatch, name):
    # The fixtures' setup copies a package with `python`: the running interpreter, as when they were recorded.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    run_dir = tmp_path / name
    shutil.copytree(FIXTURES / name, run_dir)  # fixtures keep only run.json and events.jsonl
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [], "\n".join(d.what + "\n" + d.diff for d in report.harness[:3])
    assert report.prompts == sum(isinstance(e, ModelReplied) for e in read_events(run_dir))


def test_volatile_text_is_normalised():
    a = "-rw-r--r-- 1 root root 3 Dec  1 14:43 notes.txt\nTue Dec  1 14:43:07 UTC 2026\n/tmp/abc/run-1/workspace\n"
    b = "-rw-r--r-- 1 root root 3 Jan 12 09:05 notes.txt\nWed Jan 12 09:05:59 UTC 2027\n/tmp/xyz/run-2/workspace\n"
    assert normalise(a, ["/tmp/abc/run-1"]) == normalise(b, ["/tmp/xyz/run-2"])
    assert normalise("took 0.52s at 2026-12-01T14:43:07Z") == normalise("took 1.9 s at 2027-01-02T01:02:03+01:00")
    assert normalise("3 files") != normalise("4 files")


def test_the_readme_example_replays_cleanly_played_back_and_executed(tmp_path):
    """examples/demo_script.yaml lists the workspace with `ls -la`: its times change, the harness does not."""
    examples = Path(__file__).resolve().parents[3] / "examples"
    ran = runner.invoke(
        app,
        [
            "run",
            "--task",
            str(examples / "demo_task.yaml"),
            "--model",
            f"scripted:{examples / 'demo_script.yaml'}",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert ran.exit_code == 0, ran.output
    [run_dir] = list((tmp_path / "runs").iterdir())
    played = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "replays")])
    assert played.exit_code == 0 and "0 harness divergences" in played.output, played.output
    executed = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "replays"), "--execute"])
    assert executed.exit_code == 0 and "0 changed in the world" in executed.output, executed.output


@pytest.mark.slow  # a subprocess killed inside a sleeping call, then resumed, for each rule
@pytest.mark.parametrize("rule", ["unknown", "rerun", "ask"])
def test_a_run_resumed_after_a_kill_inside_a_tool_replays_with_no_divergence(tmp_path, rule):
    """The smallest case: the first call (`sleep 4; echo 1 >> log.txt`) killed with -9 during its sleep, the run
    resumed (the call settled by checkpoint.interrupted_writes; under `ask`, approved and resumed again), then
    replayed: the replay goes through the same two (or three) processes and settles the call as they did."""
    import signal
    import subprocess
    import time

    from core.events import RunResumed, ToolIntent

    harness = str(Path(sys.executable).parent / "harness")
    script = tmp_path / "script.json"
    replies = [
        call("shell", command="sleep 4; echo 1 >> log.txt"),
        call("shell", command="echo 2 >> log.txt; cat log.txt"),
        call("submit", answer="done"),
    ]
    script.write_text(json.dumps([r.model_dump() for r in replies]))
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[checkpoint]\ninterrupted_writes = "{rule}"\n')
    args = ["run", "--task", "Count.", "--model", f"scripted:{script}", "--policy", str(policy), "--out", str(tmp_path)]
    proc = subprocess.Popen([harness, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not [
        d for d in tmp_path.glob("*/events.jsonl") if any(isinstance(e, ToolIntent) for e in read_events(d.parent))
    ]:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [run_dir] = [d.parent for d in tmp_path.glob("*/events.jsonl")]
    for _ in range(2):
        done = subprocess.run([harness, "resume", str(run_dir)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        if rule != "ask" or "submitted" in done.stdout:
            break
        assert runner.invoke(app, ["approve", str(run_dir), "--call", "call_1_0", "--yes"]).exit_code == 0
    report = replay(run_dir, out=tmp_path / "replay")
    assert report.harness == [], "\n".join(f"{d.what}\n{d.diff}" for d in report.harness)
    assert report.recorded_stop == report.replayed_stop == "submitted"
    lives = 1 + sum(isinstance(e, RunResumed) for e in read_events(run_dir))
    assert sum(isinstance(e, RunResumed) for e in read_events(report.replay_dir)) == lives - 1 >= 1


def test_a_run_still_in_progress_is_not_replayed(tmp_path):
    """A process still writes its journal: the recording has no end yet, so replay refuses, as resume does."""
    from agent.journal.store import Journal
    from core.errors import HarnessError

    _, run_dir = start(
        RunSpec(Task(prompt="x"), ScriptedModel([call("submit", answer="ok")]), HarnessPolicy(), tmp_path)
    )
    writer = Journal(run_dir)  # holds the run's lock, as the running process does
    try:
        with pytest.raises(HarnessError, match="is in use: a process is still writing its journal"):
            replay(run_dir)
        result = runner.invoke(app, ["replay", str(run_dir)])
        assert result.exit_code == 2 and "divergence" not in result.output and "Traceback" not in result.output
    finally:
        writer.close()
    assert replay(run_dir).harness == []  # once it is free
