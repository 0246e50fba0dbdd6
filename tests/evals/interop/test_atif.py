"""`harness export --format atif`: harbor's own models accept the trajectory, and it carries the run's essentials."""

from __future__ import annotations

import json

from evals.interop.exports.write import export
from tests.evals.interop.conftest import folded, harbor_errors, summary


def test_harbor_accepts_the_trajectory_of_a_run_and_of_each_run_of_a_batch(full_run, batch, tmp_path):
    files = export(full_run, "atif", tmp_path / "run").written + export(batch, "atif", tmp_path / "batch").written
    assert [p.name for p in files] == ["full.atif.json", "budget.atif.json", "full.atif.json", "graded.atif.json"]
    assert harbor_errors(*files) == {str(p): [] for p in files}


def test_the_trajectory_holds_every_step_call_observation_and_token(full_run, tmp_path):
    [path] = export(full_run, "atif", tmp_path).written
    trajectory, run, totals = json.loads(path.read_text()), folded(full_run), summary(full_run)
    assert trajectory["schema_version"] == "ATIF-v1.7" and trajectory["session_id"] == "full"
    assert trajectory["agent"]["model_name"] == "scripted:full"
    assert {t["function"]["name"] for t in trajectory["agent"]["tool_definitions"]} >= {"shell", "submit"}

    steps = trajectory["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["source"] for s in steps[:2]] == ["system", "user"]
    agent = [s for s in steps if s["source"] == "agent"]
    assert len(agent) == len(run.replies) == totals["model_calls"] == 6
    for exported, step in zip(agent, run.replies):
        assert exported["message"] == step.reply.message.text
        assert [(c["tool_call_id"], c["function_name"]) for c in exported.get("tool_calls", [])] == [
            (c.id, c.name) for c in step.calls
        ]
        results = exported.get("observation", {}).get("results", [])
        assert [(r["source_call_id"], r["content"], r["extra"]["status"]) for r in results] == [
            (o.call_id, o.text, o.status) for o in step.observations
        ]
        assert exported["metrics"]["prompt_tokens"] == step.usage.prompt_tokens
        assert exported["metrics"]["cached_tokens"] == step.usage.cached_tokens
    assert agent[0]["reasoning_content"] == "The workspace may be empty."
    assert agent[1]["observation"]["results"][0]["extra"]["error_kind"] == "nonzero_exit"
    broken = agent[2]["tool_calls"][0]
    assert broken["arguments"] == {} and broken["extra"]["raw_arguments"] == '{"command": "ls'
    # The reply without a tool call, then the harness's note as a step of its own.
    assert "tool_calls" not in agent[3] and steps[steps.index(agent[3]) + 1]["source"] == "user"

    final = trajectory["final_metrics"]
    assert final["total_steps"] == len(steps)
    assert (
        final["total_prompt_tokens"] == totals["tokens"]["prompt"] == sum(a["metrics"]["prompt_tokens"] for a in agent)
    )
    assert final["total_completion_tokens"] == totals["tokens"]["completion"]
    assert final["total_cached_tokens"] == totals["tokens"]["cached"]
    assert final["total_cost_usd"] == totals["cost_usd"] > 0
    assert trajectory["extra"]["verdict"] == {"name": "success", "value": True}
    assert trajectory["extra"]["outcome"] == {"answer": "a.txt holds a"}


def test_a_graded_run_carries_its_verdict(batch, tmp_path):
    export(batch, "atif", tmp_path)
    verdicts = {p.name: json.loads(p.read_text())["extra"] for p in tmp_path.iterdir()}
    assert verdicts["graded.atif.json"]["verdict"] == {"name": "resolved", "value": False}
    assert verdicts["budget.atif.json"]["stop_reason"] == "step_budget"
    assert verdicts["budget.atif.json"]["verdict"] == {"name": "success", "value": False}


def test_a_run_whose_sandbox_never_started_is_still_a_valid_trajectory(unstarted_run, tmp_path):
    [path] = export(unstarted_run, "atif", tmp_path).written
    assert harbor_errors(path) == {str(path): []}
    trajectory = json.loads(path.read_text())
    assert [(s["source"], s["message"]) for s in trajectory["steps"]] == [
        ("user", "Task unstarted: never reaches the model.")
    ]
    assert trajectory["extra"]["stop_reason"] == "environment_error"


def test_a_compacted_run_keeps_every_reply(compacted_run, tmp_path):
    [path] = export(compacted_run, "atif", tmp_path).written
    assert harbor_errors(path) == {str(path): []}
    trajectory, totals = json.loads(path.read_text()), summary(compacted_run)
    assert totals["compactions"] == 1 and trajectory["final_metrics"]["extra"]["compactions"] == 1
    assert [s["message"] for s in trajectory["steps"] if s["source"] == "agent"][-2:] == ["Next: four.", "Done."]
