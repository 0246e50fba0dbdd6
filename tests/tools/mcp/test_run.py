"""A whole run with MCP tools: the scripted model calls them through the loop, and the journal shows it."""

from __future__ import annotations

import json

from agent.launch import launch
from agent.models.scripted import ScriptedModel
from agent.policy import HarnessPolicy
from agent.task import Task
from tests.agent.helpers import call, events

from .conftest import stdio


def test_an_mcp_write_tool_runs_through_the_dispatcher_and_is_journaled(tmp_path):
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py", approve="never")])  # untrusted, approval turned off
    model = ScriptedModel([call("notes__write_note", text="buy milk"), call("submit", answer="done")])
    summary, run_dir = launch(Task(prompt="Store a note."), model, "local", policy, tmp_path)
    assert summary.stop_reason == "submitted"
    log = events(run_dir)
    [intent] = [e for e in log if e["type"] == "tool_intent" and e["tool"] == "notes__write_note"]
    assert intent["arguments"] == {"text": "buy milk"}
    [observed] = [e for e in log if e["type"] == "tool_observed" and e["observation"]["tool"] == "notes__write_note"]
    assert observed["seq"] > intent["seq"] and observed["observation"]["status"] == "ok"
    assert observed["observation"]["text"] == "stored note: buy milk"
    recorded = json.loads((run_dir / "run.json").read_text())["policy"]["mcp"]
    assert recorded[0]["name"] == "notes" and recorded[0]["approve"] == "never"


def test_the_model_sees_fenced_mcp_tools_next_to_the_built_in_ones(tmp_path):
    seen: list[list] = []

    class Watching(ScriptedModel):
        def complete(self, messages, tools, params):
            seen.append(list(tools))
            return super().complete(messages, tools, params)

    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py", trusted=True)])
    launch(Task(prompt="x"), Watching([call("submit", answer="ok")]), "local", policy, tmp_path)
    by_name = {tool.name: tool for tool in seen[0]}
    assert "shell" in by_name and by_name["notes__echo"].effect.value == "read"
    assert '<mcp-untrusted server="notes">' in by_name["notes__echo"].description


def test_an_untrusted_write_tool_waits_for_approval_by_default(tmp_path):
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py")])
    model = ScriptedModel([call("notes__write_note", text="x")])
    summary, run_dir = launch(Task(prompt="Store a note."), model, "local", policy, tmp_path)
    assert summary.stop_reason == "awaiting_approval"
    assert not [e for e in events(run_dir) if e["type"] in ("tool_intent", "tool_observed")]
