"""A whole run with MCP tools: the scripted model calls them through the loop, and the journal shows it."""

from __future__ import annotations

import json

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from tests.agent.helpers import call, events
from tools.builtin import standard_tools

from .conftest import said, stdio


class Watching(ScriptedModel):
    """The scripted model, keeping the tools it was offered at each step."""

    def __init__(self, replies):
        super().__init__(replies)
        self.offered: list[list] = []

    def complete(self, messages, tools, params):
        self.offered.append(list(tools))
        return super().complete(messages, tools, params)


def test_an_mcp_write_tool_runs_through_the_dispatcher_and_is_journaled(tmp_path):
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py", approve="never")])  # untrusted, approval turned off
    model = Watching([call("notes__write_note", text="buy milk"), call("submit", answer="done")])
    summary, run_dir = start(RunSpec(Task(prompt="Store a note."), model, policy, tmp_path))
    assert summary.stop_reason == "submitted"
    log = events(run_dir)
    [intent] = [e for e in log if e["type"] == "tool_intent" and e["tool"] == "notes__write_note"]
    assert intent["arguments"] == {"text": "buy milk"}
    [observed] = [e for e in log if e["type"] == "tool_observed" and e["observation"]["tool"] == "notes__write_note"]
    assert observed["seq"] > intent["seq"] and observed["observation"]["status"] == "ok"
    assert said(observed["observation"]["text"], "notes") == "stored note: buy milk"
    recorded = json.loads((run_dir / "run.json").read_text())["policy"]["mcp"]
    assert recorded[0]["name"] == "notes" and recorded[0]["approve"] == "never"
    offered = {tool.name: tool for tool in model.offered[0]}  # the model sees MCP tools beside the built-in ones
    assert "shell" in offered and offered["notes__echo"].effect.value == "write"  # untrusted: hints do not count
    assert '<mcp-untrusted server="notes">' in offered["notes__echo"].description


def test_an_untrusted_write_tool_waits_for_approval_by_default(tmp_path):
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py")])
    model = ScriptedModel([call("notes__write_note", text="x")])
    summary, run_dir = start(RunSpec(Task(prompt="Store a note."), model, policy, tmp_path))
    assert summary.stop_reason == "awaiting_approval"
    assert not [e for e in events(run_dir) if e["type"] in ("tool_intent", "tool_observed")]


def test_the_policy_caps_the_mcp_tools_a_run_offers(tmp_path):
    policy = HarnessPolicy(mcp=[stdio("paged", "paged.py", "25", "10")], mcp_max_tools=5)
    model = Watching([call("submit", answer="done")])
    summary, _ = start(RunSpec(Task(prompt="Look around."), model, policy, tmp_path))
    assert summary.stop_reason == "submitted"
    offered = [tool.name for tool in model.offered[0] if tool.name.startswith("paged__")]
    assert offered == [f"paged__tool_{i:03d}" for i in range(5)]


def test_a_hundred_mcp_tools_are_disclosed_progressively_without_being_asked(tmp_path):
    """Past the policy's mcp_disclose_over_tokens the MCP tools go as one-line summaries with describe_tool, the
    built-in tools whole; a policy that sets it to none sends every schema."""
    from agent.journal.store import read_events
    from agent.tokens import counter_for
    from core.events import ModelReplied
    from tools.disclosure import tools_text

    replies = [
        ScriptedReply(tool_calls=[ScriptedCall(name="describe_tool", arguments={"name": "paged__tool_042"})]),
        call("paged__tool_042", x=7),
        call("submit", answer="done"),
    ]
    sent = {}
    for name, over in (("auto", 8000), ("never", None)):
        model = Watching(replies)
        policy = HarnessPolicy(
            mcp=[stdio("paged", "paged.py", "100", "100", approve="never")], mcp_disclose_over_tokens=over
        )
        _, run_dir = start(RunSpec(Task(prompt="x"), model, policy, tmp_path / name))
        sent[name] = model.offered[0]
        assert len([e for e in read_events(run_dir) if isinstance(e, ModelReplied)]) == 3
        observed = [e["observation"] for e in events(run_dir) if e["type"] == "tool_observed"]
        assert "tool_042 got {'x': 7}" in observed[1]["text"]
    counter = counter_for("scripted")
    auto, never = (len(counter.text_ids(tools_text(sent[n]))) for n in ("auto", "never"))
    assert never > 8000 > auto and auto < never / 2
    shown = {t.name: t for t in sent["auto"]}
    assert "describe_tool" in shown and shown["shell"].description == standard_tools().get("shell").description
    assert shown["paged__tool_042"].description.startswith("(MCP paged)")
    assert "describe_tool" not in {t.name for t in sent["never"]}
