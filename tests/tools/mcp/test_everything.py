"""A scripted run against npm's @modelcontextprotocol/server-everything, over stdio and Streamable HTTP.

One run builds its task from the server's `args-prompt`, places a resource the
host chose before the task, uses a tool, follows the placed resource when it
changes, and meets a server's question (elicitation): the run stops awaiting
approval, a person's answer is recorded, and the resumed run gives it to the server.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from agent.fork import fork
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.recovery.approval import pending_calls, record_decision
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from core.mcp_settings import McpServer
from core.policy import ApprovalPolicy, HarnessPolicy
from tests.agent.helpers import call, events

from .conftest import fenced, free_port, wait_for_port
from .npm import EVERYTHING, NODE, needs_npm

pytestmark = needs_npm
DOC = "demo://resource/static/document/features.md"


@pytest.fixture(params=["stdio", "http"])
def everything(request):
    """The server as a run names it: a stdio command, or the URL of one started here on a free port."""
    if request.param == "stdio":
        yield McpServer(name="everything", command=str(NODE), args=[str(EVERYTHING), "stdio"], approve="never")
        return
    port = free_port()
    process = subprocess.Popen(
        [str(NODE), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield McpServer(name="everything", url=f"http://127.0.0.1:{port}/mcp", approve="never")
    finally:
        process.terminate()
        process.wait(10)


SCRIPT = [
    call("everything__echo", message="hello"),
    call("everything__toggle-subscriber-updates"),
    call("everything__trigger-long-running-operation", duration=6, steps=2),  # the server's updates come every 5 s
    call("everything__trigger-elicitation-request"),
    call("submit", answer="done"),
]


def test_a_scripted_run_uses_every_part_of_the_server(everything, tmp_path):
    policy = HarnessPolicy(mcp=[everything], mcp_resources=[f"everything:{DOC}"], approval=ApprovalPolicy())
    spec = RunSpec(
        Task(prompt="unused"),
        ScriptedModel(SCRIPT),
        policy,
        tmp_path,
        prompt=("everything:args-prompt", {"city": "Paris"}),
    )
    summary, run_dir = start(spec)

    # The task came from the prompt; the resource sits before it in the opening user message, fenced.
    info = json.loads((run_dir / "run.json").read_text())
    assert "Paris" in info["task"]["prompt"] and info["task"]["id"] == "args-prompt"
    log = events(run_dir)
    opening = [e["message"]["text"] for e in log if e["type"] == "message" and e["message"]["role"] == "user"][0]
    resource, _, task = opening.partition("\n\n" + info["task"]["prompt"])
    assert resource.startswith(f'Resource {DOC} from MCP server "everything" (untrusted).') and task == ""
    assert "Everything Server - Features" in fenced(resource, "everything")

    observed = {e["observation"]["tool"]: e["observation"] for e in log if e["type"] == "tool_observed"}
    assert observed["everything__echo"]["status"] == "ok" and "hello" in observed["everything__echo"]["text"]
    updates = [e for e in log if e["type"] == "resource_updated"]
    assert updates and updates[0]["uri"] == DOC and updates[0]["tokens"] > 0
    assert "Everything Server - Features" in updates[0]["message"]["text"]

    # The server's question stopped the run; nothing of that call was observed.
    assert summary.stop_reason == "awaiting_approval"
    [asked] = [e for e in log if e["type"] == "input_requested"]
    assert (
        "Please provide inputs" in asked["question"]["message"] and "name" in asked["question"]["schema"]["properties"]
    )
    assert pending_calls(run_dir) == [asked["input_id"]]
    assert "everything__trigger-elicitation-request" not in observed

    record_decision(run_dir, asked["input_id"], True, answer={"name": "Ada Lovelace", "check": True})
    done = resume(run_dir, model=ScriptedModel(SCRIPT))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    answered = [
        e["observation"]
        for e in events(run_dir)
        if e["type"] == "tool_observed" and e["observation"]["tool"] == "everything__trigger-elicitation-request"
    ]
    assert len(answered) == 1 and answered[0]["status"] == "ok"
    assert "User provided the requested information" in answered[0]["text"] and "Ada Lovelace" in answered[0]["text"]

    # Played back, no server runs: the recorded updates come at the same steps, journaled again, and the replay goes
    # through both lives to the same end.
    played = replay(run_dir, out=tmp_path / "replay")
    assert played.notes == [] and played.harness == [], [d.diff for d in played.harness]
    assert played.replayed_stop == played.recorded_stop == "submitted"
    assert updates_in(played.replay_dir) == updates_in(run_dir)


def test_a_fork_that_follows_a_changing_resource_replays_with_its_updates(everything, tmp_path):
    """The fork's own steps meet the resource's updates; played back, its branch gets them at the same steps."""
    script = [*SCRIPT[1:3], SCRIPT[-1]]
    policy = HarnessPolicy(mcp=[everything], mcp_resources=[f"everything:{DOC}"])
    summary, run_dir = start(RunSpec(Task(prompt="Follow it."), ScriptedModel(script), policy, tmp_path / "runs"))
    assert summary.stop_reason == "submitted"
    made = fork(run_dir, 0, model=ScriptedModel(script), out=tmp_path / "forks")  # its MCP calls are all its own
    assert made.summary is not None and made.summary.stop_reason == "submitted" and updates_in(made.run_dir)

    played = replay(made.run_dir, out=tmp_path / "replay")
    assert played.notes == [] and played.harness == [], [d.diff for d in played.harness]
    assert played.replayed_stop == played.recorded_stop == "submitted"
    assert updates_in(played.replay_dir) == updates_in(made.run_dir)


def updates_in(run_dir):
    """The resource updates a run journaled, as a replay must journal them again."""
    kept = ("step", "server", "uri", "sha256", "message", "tokens")
    return [{k: e[k] for k in kept} for e in events(run_dir) if e["type"] == "resource_updated"]


def test_a_run_that_stopped_for_the_servers_question_replays_stopping_there_too(everything, tmp_path):
    """Played back, the call asks the recorded question again and the replay's life ends there, as the run's
    process did; the person's recorded answer then takes the replay to the same end, and the resumed life gets the
    placed resource's updates its recorded one met."""
    script = [call("everything__echo", message="hi"), SCRIPT[3], *SCRIPT[1:3], SCRIPT[-1]]
    policy = HarnessPolicy(mcp=[everything], mcp_resources=[f"everything:{DOC}"], approval=ApprovalPolicy())
    summary, run_dir = start(RunSpec(Task(prompt="Ask me."), ScriptedModel(script), policy, tmp_path / "runs"))
    assert summary.stop_reason == "awaiting_approval"
    [asked] = pending_calls(run_dir)
    record_decision(run_dir, asked, True, answer={"name": "Ada Lovelace", "check": True})
    done = resume(run_dir, model=ScriptedModel(script))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    [resumed] = [e for e in events(run_dir) if e["type"] == "resumed"]
    assert updates_in(run_dir) and all(u["step"] > resumed["step"] for u in updates_in(run_dir))

    played = replay(run_dir, out=tmp_path / "replay")
    assert played.notes == [] and played.harness == [], [d.diff for d in played.harness]
    assert played.replayed_stop == "submitted"
    assert [e.type for e in read_events(played.replay_dir)].count("input_requested") == 1
    assert updates_in(played.replay_dir) == updates_in(run_dir)
