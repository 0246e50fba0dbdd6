"""Replay: the recorded replies re-driven in a fresh sandbox; observations that changed are reported with a diff."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.main import app
from agent.launch import launch
from agent.models.scripted import ScriptedModel
from core.policy import ApprovalPolicy, HarnessPolicy
from agent.replay import replay
from agent.resume import resume
from agent.approval import record_decision
from agent.task import Task
from tests.agent.helpers import call

runner = CliRunner()


def test_a_deterministic_run_replays_with_no_divergence(tmp_path):
    task = Task(prompt="x", files={"data.txt": "3\n1\n2\n"}, setup=["echo seeded > seed.txt"])
    replies = [call("shell", command="sort data.txt"), call("write_file", path="out.txt", content="1 2 3\n"),
               call("shell", command="cat out.txt seed.txt"), call("submit", answer="done")]
    _, run_dir = launch(task, ScriptedModel(replies), "local", HarnessPolicy(), tmp_path / "runs")
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.divergences == [] and report.observations == 4
    assert report.recorded_stop == report.replayed_stop == "submitted"
    assert report.replay_dir.parent == tmp_path / "replays" and (report.replay_dir / "workspace" / "out.txt").exists()


def test_recorded_approval_decisions_are_applied_in_the_replay(tmp_path):
    replies = [call("write_file", path="a.txt", content="A"), call("submit", answer="done")]
    policy = HarnessPolicy(approval=ApprovalPolicy(approve="writes", per_tool={"submit": "never"}))
    _, run_dir = launch(Task(prompt="x"), ScriptedModel(replies), "local", policy, tmp_path / "runs")
    record_decision(run_dir, "call_1_0", False, "no")
    resume(run_dir, model=ScriptedModel(replies))
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.divergences == [] and report.replayed_stop == "submitted"


def test_a_changed_tool_output_is_reported_with_its_step_and_a_diff(tmp_path):
    outside = tmp_path / "world.txt"  # a part of the world the sandbox does not reset
    outside.write_text("alpha\nbeta\n")
    replies = [call("shell", command="echo start"), call("shell", command=f"cat {outside}"), call("submit", answer="done")]
    _, run_dir = launch(Task(prompt="x"), ScriptedModel(replies), "local", HarnessPolicy(), tmp_path / "runs")
    assert replay(run_dir, out=tmp_path / "replays").divergences == []

    outside.write_text("alpha\ngamma\n")
    report = replay(run_dir, out=tmp_path / "replays")
    [d] = report.divergences
    assert (d.step, d.call_id, d.tool, d.what) == (2, "call_2_0", "shell", "output changed")
    assert "-beta\n" in d.diff and "+gamma\n" in d.diff and " alpha\n" in d.diff

    result = runner.invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "cli")])
    assert result.exit_code == 1, result.output
    assert "divergence at step 2, call call_2_0 (shell): output changed" in result.output
    assert "+gamma" in result.output and "1 divergences" in result.output
