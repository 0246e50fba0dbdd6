"""`harness import` on one file of each format: the run directory's journal holds the source's replies, its
calls with their results (a text-based agent's commands as `bash` calls), each reply's recorded usage and
cost, and run.json says where the run came from and what its format does not carry."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from cli.main import app
from core.types import Usage
from tests.evals.interop import documents as docs

runner = CliRunner()


def imported(path: Path, out: Path, *args: str) -> Path:
    result = runner.invoke(app, ["import", str(path), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return Path(result.output.split("run directory: ")[1].strip())


def calls_and_results(run_dir: Path) -> list[tuple[str, str, str, int | None]]:
    return [
        (c.name, json.loads(c.arguments).get("command", ""), o.status, o.exit_code)
        for s in fold(read_events(run_dir)).steps
        for c, o in zip(s.calls, s.observations)
    ]


def test_mini_swe_agent_v1_text_actions_become_bash_calls_with_their_return_codes(tmp_path):
    path = docs.write(tmp_path / "repo__repo-1.traj.json", docs.mini_v1())
    run_dir = imported(path, tmp_path / "runs")
    info, run = read_run_info(run_dir), fold(read_events(run_dir))
    assert [s.calls for s in run.steps if s.replied].count(()) == 1  # the reply with two blocks ran nothing
    assert calls_and_results(run_dir) == [
        ("bash", "ls", "ok", 0),
        ("bash", "python -m pytest", "error", 1),
        ("bash", "sed -i s/0/1/ counter.py", "ok", 0),
        ("bash", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", "ok", None),
    ]
    no_call = next(s for s in run.steps if s.replied and not s.calls)
    assert no_call.notes[0].text.startswith("Please always provide EXACTLY ONE action")
    first = run.steps[0]
    assert first.reply.message.text == "THOUGHT: look first."  # the block is the call's, not counted twice
    assert first.usage == Usage(prompt_tokens=1000, cached_tokens=500, completion_tokens=40, reasoning_tokens=10)
    assert first.replied.cost_usd == 0.001 and first.reply.message.reasoning.text == "Thinking it over."
    assert first.counted_tokens and first.replied.prefix_reused == 0  # the harness's own count beside the source's
    assert run.opening[0].text == docs.SYSTEM and run.stop.reason == "submitted"
    assert info.imported["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (info.imported["format"], info.imported["format_version"]) == ("mini-swe-agent", "mini-swe-agent-1")
    assert (info.imported["agent"], info.imported["agent_version"]) == ("mini-swe-agent", "1.15.0")
    assert info.imported["model"] == "google/gemini-3-pro-preview" and info.model == "google:gemini-3-pro-preview"
    assert info.imported["tools"] == ["bash"] and info.imported["tool_schemas_sent"] is False
    assert info.tools == []  # a text-based agent sent no schema, so rerender prices none
    assert any("timestamps" in gap for gap in info.imported_gaps)
    assert any("exact prompt bytes" in gap for gap in info.imported_gaps)
    assert (run_dir / "artifacts" / "model.patch").read_text() == docs.PATCH
    assert [p.name for p in run_dir.parent.iterdir()] == [run_dir.name]  # the staging folder is gone
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cost_usd"] == 0.015 and summary["tokens"]["prompt"] == 6000 and summary["tokens"]["cached"] == 3000


def test_mini_swe_agent_v2_tool_calls_keep_their_ids_usage_times_and_schema(tmp_path):
    path = docs.write(tmp_path / "v2.traj.json", docs.mini_v2_toolcall())
    run_dir = imported(path, tmp_path / "runs")
    info, run = read_run_info(run_dir), fold(read_events(run_dir))
    assert [c.id for s in run.steps for c in s.calls] == ["call_1", "call_2", "call_3"]
    assert calls_and_results(run_dir)[:2] == [
        ("bash", "python -m pytest", "error", 1),
        ("bash", "sed -i s/0/1/ counter.py", "ok", 0),
    ]
    assert run.steps[2].observations[0].text == docs.PATCH  # the submitting command's output: the submission
    assert run.steps[0].usage == Usage(
        prompt_tokens=2000, cached_tokens=1900, cache_write_tokens=50, completion_tokens=30, reasoning_tokens=5
    )
    assert [s.replied.cost_usd for s in run.steps if s.replied] == [0.01, 0.02, 0.03]
    assert run.steps[0].reply.message.reasoning.text == "Why 1."
    assert run.steps[1].first_ts == 1_760_000_020.0  # the source's own times
    assert info.started_at.startswith("2025-10-09")
    assert info.imported["format_version"] == "mini-swe-agent-1.1" and info.imported["tool_schemas_sent"]
    assert [t["name"] for t in info.tools] == ["bash"]
    tools = json.loads((run_dir / "artifacts" / "tools.json").read_text())
    assert tools[0]["input_schema"]["required"] == ["command"]
    assert info.model == "anthropic:claude-sonnet-4-5-20250929" and info.price is not None


def test_mini_swe_agent_v2_through_the_responses_api(tmp_path):
    run_dir = imported(docs.write(tmp_path / "r.traj.json", docs.mini_v2_responses()), tmp_path / "runs")
    step = fold(read_events(run_dir)).steps[0]
    assert step.reply.message.text == "I will look." and step.reply.message.reasoning.text == "Check the folder."
    assert step.usage == Usage(prompt_tokens=100, cached_tokens=25, completion_tokens=40, reasoning_tokens=30)
    assert step.replied.cost_usd == 0.03 and step.reply.finish_reason == "stop"
    assert calls_and_results(run_dir) == [("bash", "pwd", "ok", 0)]
    assert fold(read_events(run_dir)).stop.reason == "step_budget"


def test_swe_agent_traj_takes_the_last_observation_and_times_from_its_trajectory(tmp_path):
    path = docs.write(tmp_path / "repo__repo-1.traj", docs.swe_agent())
    run_dir = imported(path, tmp_path / "runs")
    info, run = read_run_info(run_dir), fold(read_events(run_dir))
    assert [c.name for s in run.steps for c in s.calls] == ["find_file", "edit", "submit"]
    assert [o.text for s in run.steps for o in s.observations] == [
        "Found 1 match\n(Open file: n/a)",
        "Replaced 1 occurrence\n(Open file: counter.py)",
        docs.PATCH,  # the history stopped before it; the trajectory has it
    ]
    assert [o.duration_s for s in run.steps for o in s.observations] == [0.25, 0.5, 0.75]
    assert info.task["id"] == "repo__repo-1" and info.model == "gpt-4o"
    assert info.imported["recorded"]["tokens_sent"] == 7000
    assert any("usage per reply" in gap for gap in info.imported_gaps)
    assert all(s.replied.cost_usd is None for s in run.steps if s.replied)  # not recorded: not made up
    assert run.stop.reason == "submitted"


def test_atif_steps_keep_their_metrics_tool_definitions_and_times(tmp_path):
    path = docs.write(tmp_path / "trial" / "agent" / "trajectory.json", docs.atif("task-7"))
    run_dir = imported(path, tmp_path / "runs")
    info, run = read_run_info(run_dir), fold(read_events(run_dir))
    assert calls_and_results(run_dir) == [
        ("bash", "pytest", "error", 1),
        ("bash", "sed -i s/0/1/ counter.py", "ok", None),
    ]
    assert run.steps[1].usage == Usage(prompt_tokens=1000, cached_tokens=500, completion_tokens=20)
    assert run.steps[1].replied.cost_usd == 0.004
    assert run.steps[1].first_ts - run.steps[0].first_ts == 10
    assert info.task["id"] == "task-7" and info.imported["agent"] == "terminus-2"
    assert info.imported["tool_set"] == "recorded" and info.tools[0]["name"] == "bash"
    assert run.stop.reason == "not_recorded"


def test_an_inspect_log_gives_one_run_per_sample_with_scores_and_usage(tmp_path):
    path = docs.write_eval(tmp_path / "arith.eval", samples=3)
    result = runner.invoke(app, ["import", str(path), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    batch = tmp_path / "runs" / "import-arith"
    run_dirs = sorted(p for p in batch.iterdir() if (p / "run.json").is_file())
    assert [read_run_info(d).task["id"] for d in run_dirs] == ["arith/1", "arith/2", "arith/3"]
    run = fold(read_events(run_dirs[0]))
    assert run.opening[1].text == "What is six times seven?"  # the attachment it pointed to
    assert run.steps[0].observations[0].status == "timeout"
    assert run.steps[1].usage == Usage(prompt_tokens=600, cached_tokens=500, completion_tokens=10)
    assert run.steps[1].reply.message.text == "42" and run.steps[1].reply.message.reasoning.text == "Done."
    outcomes = [json.loads((d / "summary.json").read_text())["outcome"] for d in run_dirs]
    assert [o["passed"] for o in outcomes] == [True, False, True]
    assert read_run_info(run_dirs[0]).imported["part"] == "sample 1, epoch 1"


def test_an_inspect_json_log_reads_like_its_eval_form(tmp_path):
    path = docs.write(tmp_path / "arith.json", docs.inspect_json(samples=1))
    run_dir = imported(path, tmp_path / "runs")
    assert read_run_info(run_dir).imported["format"] == "inspect"
    assert calls_and_results(run_dir) == [("bash", "", "timeout", None)]


def test_a_format_named_on_the_command_line_is_used(tmp_path):
    path = docs.write(tmp_path / "t.json", docs.atif())
    run_dir = imported(path, tmp_path / "runs", "--format", "atif")
    assert read_run_info(run_dir).imported["format"] == "atif"


def test_tool_calls_without_ids_or_with_arguments_recorded_as_objects_or_null_read_alike(tmp_path):
    """mini-swe-agent and SWE-agent write OpenAI tool calls the same way; a call without an id gets one from
    its reply, and arguments recorded as an object or as null become the string a model would have sent."""
    recorded = [
        {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}},
        {"type": "function", "function": {"name": "bash", "arguments": None}},
    ]
    mini, swe = docs.mini_v2_toolcall(), docs.swe_agent()
    next(m for m in mini["messages"] if m.get("tool_calls"))["tool_calls"] = recorded
    next(m for m in swe["history"] if m.get("tool_calls"))["tool_calls"] = recorded
    for name, doc in (("mini.traj.json", mini), ("repo__repo-1.traj", swe)):
        run_dir = imported(docs.write(tmp_path / name, doc), tmp_path / name.split(".")[0])
        first = fold(read_events(run_dir)).steps[0].calls
        assert [(c.name, c.arguments) for c in first] == [("bash", '{"command": "ls"}'), ("bash", "{}")], name
        assert len({c.id for c in first}) == 2 and all(c.id for c in first), name
