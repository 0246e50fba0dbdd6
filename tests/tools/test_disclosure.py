"""Progressive disclosure: one line per tool in every request, the full schema through describe_tool."""

from __future__ import annotations

import json

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from agent.tokens import counter_for
from core.context_policy import DiscloseTools
from core.policy import HarnessPolicy
from tests.agent.helpers import call, events
from tools.builtin import standard_tools
from tools.disclosure import request_tools, tools_text, with_describe_tool


def test_requests_carry_summaries_and_cost_fewer_schema_tokens():
    tools = with_describe_tool(standard_tools())
    full = request_tools(standard_tools(), None)
    shown = request_tools(tools, DiscloseTools())
    assert {t.name for t in shown} == {t.name for t in full} | {"describe_tool"}
    read = next(t for t in shown if t.name == "read_file")
    assert read.description == "Show a file with line numbers, optionally a line range."
    counter = counter_for("scripted")
    saved = len(counter.text_ids(tools_text(full))) - len(counter.text_ids(tools_text(shown)))
    assert saved > 0.3 * len(counter.text_ids(tools_text(full)))


def describe(name: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name="describe_tool", arguments={"name": name})])


def test_describe_tool_returns_the_full_description_and_schema_and_real_arguments_are_still_validated(tmp_path):
    policy = HarnessPolicy(context=[DiscloseTools()])
    replies = [describe("replace"), call("replace", path="x"), describe("nope"), call("submit", answer="ok")]
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path))
    obs = [e["observation"] for e in events(run_dir) if e["type"] == "tool_observed"]
    assert obs[0]["status"] == "ok" and "must occur exactly once" in obs[0]["text"]
    schema = json.loads(obs[0]["text"].split("Arguments (JSON schema): ", 1)[1])
    assert set(schema["required"]) == {"path", "old", "new"}
    assert obs[1]["error_kind"] == "invalid_args"  # the open schema the model saw does not loosen validation
    assert obs[2]["status"] == "error" and "read_file" in obs[2]["text"]
