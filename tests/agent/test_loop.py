"""End to end: the scripted model and the local sandbox, through the real loop and journal."""

from __future__ import annotations

import json

from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import ErrorPolicy, HarnessPolicy, StopPolicy
from core.types import ModelReply
from tests.agent.helpers import call, calls, events

RUN_JSON_FIELDS = {
    "run_id",
    "task",
    "model",
    "sandbox",
    "image",
    "workdir",
    "env",
    "sandbox_options",
    "toolset",
    "tools",
    "policy",
    "harness_version",
    "seed",
    "context_window",
    "started_at",
    "price",
    "imported",  # None for a run made here; `harness import` fills it
    "imported_gaps",
    "memory",  # None for a run without the memory tool
    "fork",  # None for a run of its own; `harness fork` fills it
    "mcp_prompt",  # None for a task not made from an MCP prompt
}
SUMMARY_FIELDS = {
    "run_id",
    "task_id",
    "model",
    "policy",
    "stop_reason",
    "message",
    "outcome",
    "steps",
    "overflow_recoveries",
    "overflow_dropped_tokens",
    "tokens",
    "cache_hit_rate",
    "wall_s",
    "model_calls",
    "model_failures",
    "tool_calls",
    "tool_calls_total",
    "errors",
    "truncated_outputs",
    "prefix_reuse_rate",
    "compactions",
    "summariser_tokens",
    "sampling_calls",
    "sampling_tokens",
    "warnings",
    "cost_usd",
    "unpriced_calls",
}


def go(tmp_path, replies, policy=HarnessPolicy(), task=Task(prompt="do it")):
    summary, run_dir = start(RunSpec(task, ScriptedModel(replies), policy, tmp_path))
    return summary, run_dir


def test_write_run_fail_submit(tmp_path):
    summary, run_dir = go(
        tmp_path,
        [
            call("write_file", path="hello.py", content="print('hello')\n"),
            call("shell", command="python3 hello.py"),
            call("shell", command="python3 missing.py"),
            call("submit", answer="done"),
        ],
    )
    assert summary.stop_reason == "submitted" and summary.outcome == {"answer": "done"}
    assert summary.steps == 4 and summary.tool_calls == {"shell": 2, "submit": 1, "write_file": 1}
    assert summary.errors == {"nonzero_exit": 1}

    info = json.loads((run_dir / "run.json").read_text())
    assert set(info) == RUN_JSON_FIELDS
    assert [t["name"] for t in info["tools"]] == [
        "shell",
        "read_file",
        "write_file",
        "replace",
        "grep",
        "find",
        "submit",
    ]
    assert all(t["server"] == "builtin" and len(t["schema_sha256"]) == 64 for t in info["tools"])
    saved = json.loads((run_dir / "summary.json").read_text())
    assert set(saved) == SUMMARY_FIELDS and saved["stop_reason"] == "submitted"
    assert set(saved["tokens"]) == {"prompt", "completion", "cached", "cache_write", "reasoning"}

    evs = events(run_dir)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert all({"type", "seq", "ts", "step"} <= set(e) for e in evs)
    types = [e["type"] for e in evs]
    assert types[:2] == ["message", "message"] and types[-1] == "run_stopped"
    assert types.count("model_replied") == 4 and types.count("tool_observed") == 4 and types.count("tool_intent") == 4
    hello = [e for e in evs if e["type"] == "tool_observed"][1]["observation"]
    assert hello["status"] == "ok" and hello["text"].strip() == "hello"


def test_goal_check_stops_the_run(tmp_path):
    task = Task(prompt="make ok.txt", check="test -f ok.txt")
    summary, _ = go(
        tmp_path, [call("shell", command="true"), call("write_file", path="ok.txt", content="")] * 2, task=task
    )
    assert summary.stop_reason == "goal_verified" and summary.steps == 2


def test_no_tool_replies_stop_with_no_progress_and_the_model_is_told(tmp_path):
    summary, run_dir = go(tmp_path, [ScriptedReply(text="hmm")] * 5)
    assert summary.stop_reason == "no_progress" and summary.steps == 3
    nudges = [e for e in events(run_dir) if e["type"] == "message" and "no tool call" in e["message"]["text"]]
    assert len(nudges) == 3 and "submit" in nudges[0]["message"]["text"]


def test_the_same_call_with_the_same_result_stops_the_run(tmp_path):
    summary, _ = go(tmp_path, [call("shell", command="echo same")] * 10)
    assert summary.stop_reason == "no_progress" and summary.steps == 3


def test_consecutive_failures_trip_the_backstop_and_success_resets_it(tmp_path):
    fail = [call("shell", command=f"exit {i}") for i in range(1, 20)]
    replies = fail[:4] + [call("shell", command="true")] + fail[4:]
    summary, _ = go(tmp_path, replies, HarnessPolicy(errors=ErrorPolicy(max_consecutive_failures=5)))
    assert summary.stop_reason == "too_many_failures" and summary.steps == 10


def test_step_and_token_budgets(tmp_path):
    replies = [call("shell", command=f"echo {i}") for i in range(20)]
    summary, _ = go(tmp_path, replies, HarnessPolicy(stop=StopPolicy(max_steps=4)))
    assert summary.stop_reason == "step_budget" and summary.steps == 4
    big = [
        ModelReply(message=r.message, usage=r.usage.model_copy(update={"prompt_tokens": 600}))
        for r in [ScriptedModel([x]).complete([], [], HarnessPolicy().model) for x in replies]
    ]
    summary, _ = go(tmp_path / "b", big, HarnessPolicy(stop=StopPolicy(max_tokens=2000)))
    assert summary.stop_reason == "token_budget" and summary.steps == 4


def test_a_script_that_runs_out_stops_with_a_clear_model_error(tmp_path):
    summary, run_dir = go(tmp_path, [call("shell", command="echo 1")])
    assert summary.stop_reason == "model_error" and "has 1 replies" in summary.message
    assert events(run_dir)[-1]["type"] == "run_stopped"


def test_a_failed_write_then_rejection_in_one_step(tmp_path):
    summary, _ = go(
        tmp_path,
        [
            calls(("write_file", {"path": "a", "content": "1"}), ("shell", {"command": "true"})),
            call("submit", answer="x"),
        ],
    )
    assert summary.errors == {"rejected": 1} and summary.stop_reason == "submitted"
