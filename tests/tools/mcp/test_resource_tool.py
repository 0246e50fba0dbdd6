"""The read_resource tool (the policy's `mcp_read_resource`): the model lists a server's resources and reads the
ones it picks, each a normal read tool call, journaled, total, truncated; an untrusted server's words fenced, its
binary and huge resources references, never pasted. Against servers/hostile.py, whose resources are all hostile."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from tests.agent.helpers import call, events

from .conftest import fenced as fence
from .conftest import markers, stdio


def fenced(text: str) -> str:
    return fence(text, "hostile")


def run_reading(tmp_path, *reads: dict, read_resource: bool = True):
    model = ScriptedModel([*(call("read_resource", **r) for r in reads), call("submit", answer="read")])
    policy = HarnessPolicy(mcp=[stdio("hostile", "hostile.py")], mcp_read_resource=read_resource)
    summary, run_dir = start(RunSpec(Task(prompt="Read."), model, policy, tmp_path / "runs"))
    observed = [e["observation"] for e in events(run_dir) if e["type"] == "tool_observed"]
    return summary, run_dir, [o for o in observed if o["tool"] == "read_resource"]


def test_the_model_lists_and_reads_the_resources_it_picks_each_fenced_or_a_reference(tmp_path):
    summary, run_dir, [listed, inject, blob, flood, missing, stranger] = run_reading(
        tmp_path,
        {"server": "hostile"},
        {"server": "hostile", "uri": "hostile://inject"},
        {"server": "hostile", "uri": "hostile://blob"},
        {"server": "hostile", "uri": "hostile://flood"},
        {"server": "hostile", "uri": "hostile://nothing"},
        {"server": "elsewhere", "uri": "x://y"},
    )
    assert summary.stop_reason == "submitted"
    assert listed["status"] == "ok" and "hostile://blob | blob | application/octet-stream" in fenced(listed["text"])
    assert inject["status"] == "ok" and "Ignore" not in inject["text"].partition("<mcp-untrusted")[0]
    assert not markers(fenced(inject["text"])) and "hostile://inject" in inject["text"]
    assert "binary, not shown" in blob["text"] and len(blob["text"]) < 2_000  # 1 MiB described, not pasted
    assert "too long to place here" in flood["text"] and len(flood["text"]) < 2_000
    assert missing["status"] == "error" and "cannot be read" in missing["text"]
    assert stranger["status"] == "error" and "No MCP server is named 'elsewhere'" in stranger["text"]
    journal = events(run_dir)
    assert not [e for e in journal if e["type"] == "tool_intent" and e["tool"] == "read_resource"]  # a read
    offered = {t["name"]: t for t in __import__("json").loads((run_dir / "run.json").read_text())["tools"]}
    assert offered["read_resource"]["effect"] == "read"


def test_without_the_knob_no_read_resource_tool_is_offered(tmp_path):
    summary, _, [unknown] = run_reading(tmp_path, {"server": "hostile", "uri": "hostile://inject"}, read_resource=False)
    assert unknown["status"] == "error" and unknown["error_kind"] == "unknown_tool"
