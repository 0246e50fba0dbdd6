"""A run stopped while it was being opened begins again as it would have opened: its task made from its MCP prompt,
its repository map, and its MCP resources placed before the task, in the opening the model is sent; its run.json
names the task and tools it opened with, and the run replays with no divergence.

In-process, the local sandbox, a scripted model, the crash driver's stdio counter server (a resource and a prompt);
the stop is a real SIGTERM that the task's setup sends the run's own process, once."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import RepoMap
from core.events import MessageAdded, RunResumed
from core.interrupts import Abandoned, signals_handled
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from tests.agent.helpers import call
from tests.agent.recovery.crash_driver import SERVER, VALUES

SCRIPT = [call("counter__put", index=1, value=1), call("submit", answer="done")]


def opened(tmp_path: Path, name: str, setup: list[str]) -> tuple[Path, RunSpec]:
    server = McpServer(
        name="counter", command=sys.executable, trusted=True, args=[str(SERVER), str(tmp_path / f"{name}.json")]
    )
    policy = HarnessPolicy(mcp=[server], mcp_resources=[f"counter:{VALUES}"], context=[RepoMap(budget=128)])
    task = Task(prompt="unused: the prompt makes the task", files={"values.py": "def value():\n    return 1\n"})
    spec = RunSpec(
        task.model_copy(update={"setup": setup}),
        ScriptedModel(SCRIPT),
        policy,
        tmp_path / name,
        prompt=("counter:count", {"upto": "1"}),
        run_id="run",
    )
    return tmp_path / name / "run", spec


def opening(run_dir: Path) -> str:
    """The run's opening user message, its own folder's path (which the repository map names) left out."""
    text = next(
        e.message.text for e in read_events(run_dir) if isinstance(e, MessageAdded) and e.message.role == "user"
    )
    return text.replace(str(run_dir), "RUN")


def test_a_run_stopped_while_it_was_opened_begins_again_with_its_prompts_task_map_and_resources(tmp_path):
    reference, spec = opened(tmp_path, "reference", [])
    assert start(spec)[0].stop_reason == "submitted"

    once = tmp_path / "signalled"
    stop_once = f"test -e {once} || {{ touch {once}; kill -TERM {os.getpid()}; sleep 10; }}"
    run_dir, spec = opened(tmp_path, "stopped", [stop_once])
    with signals_handled(), pytest.raises(Abandoned):
        start(spec)
    assert not [e for e in read_events(run_dir) if isinstance(e, MessageAdded)]  # stopped before its first step

    done = resume(run_dir, model=ScriptedModel(SCRIPT))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert any(isinstance(e, RunResumed) for e in read_events(run_dir))
    assert opening(run_dir) == opening(reference)
    assert opening(run_dir).startswith(f'Resource {VALUES} from MCP server "counter"')
    info, want = (json.loads((d / "run.json").read_text()) for d in (run_dir, reference))
    assert (
        info["task"]["prompt"]
        == want["task"]["prompt"]
        == "Write 1, 2, ... 1 to the counter, read it back, then submit."
    )
    assert [t["name"] for t in info["tools"]] == [t["name"] for t in want["tools"]]

    played = replay(run_dir, out=tmp_path / "replays")
    assert (played.harness, played.notes, played.replayed_stop) == ([], [], "submitted")
