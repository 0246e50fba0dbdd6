"""A container killed from outside mid-run ends the run as `sandbox_dead`, with a complete journal."""

import json

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from sandboxes.docker import DockerSandbox


def shell(command: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name="shell", arguments={"command": command})])


def test_killing_the_container_after_the_first_tool_call_stops_the_run_as_sandbox_dead(docker_ready, tmp_path):
    boxes = []

    def open_box(_workspace):
        boxes.append(DockerSandbox.start(client=docker_ready))
        return boxes[0]

    def kill_after_first_tool_call(event):
        if event.type == "tool_observed" and boxes[0].alive():
            boxes[0].container.kill()

    replies = [shell("echo first > first.txt && cat first.txt"), shell("echo second"), shell("echo third")]
    summary, run_dir = start(
        RunSpec(
            Task(prompt="write two files"),
            ScriptedModel(replies),
            HarnessPolicy(),
            tmp_path,
            sandbox=open_box,
            listeners=(kill_after_first_tool_call,),
        )
    )

    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "sandbox_dead"
    assert summary.steps == 2
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    types = [e["type"] for e in events]
    assert types.count("tool_intent") == types.count("tool_observed") == 2
    assert types[-1] == "run_stopped"
    first, second = [e["observation"] for e in events if e["type"] == "tool_observed"]
    assert first["status"] == "ok" and first["text"].strip() == "first"
    assert second["status"] == "error"
    assert f"container {boxes[0].name}" in second["text"]
    assert "killed or stopped from outside" in second["text"]
    assert not docker_ready.containers.list(
        all=True, filters={"name": boxes[0].name}, ignore_removed=True
    )  # closed by the run
