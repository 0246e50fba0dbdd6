"""Long-running MCP calls as tasks (the Tasks extension of 2026-07-28) against servers/tasks.py, a Python SDK server
built on the SDK's extension hooks: a call answered with a task handle is journaled with it, polled to its end,
cancelled on its timeout or a stop; a run killed while it waits resumes by following the same task; a task the
server has forgotten is one clear observation; a task's question waits for a person like a direct call's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recovery.approval import record_decision
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from core import interrupts
from core.events import ToolProgress
from core.mcp_settings import McpServer
from core.policy import ApprovalPolicy, DispatchPolicy, HarnessPolicy
from tests.agent.helpers import call, events
from tools.base import Registry, ToolContext
from tools.mcp import with_mcp

from .conftest import SERVERS, free_port, said, stdio, wait_for_port

HARNESS = str(Path(sys.executable).parent / "harness")


def served(log: Path, *args: str) -> McpServer:
    return stdio("tasks", "tasks.py", "--log", str(log), *args, approve="never")


def seen(log: Path, event: str) -> list[dict]:
    """What the server logged of one kind of request."""
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [line for line in lines if line["event"] == event]


@pytest.fixture
def http_tasks(tmp_path):
    """servers/tasks.py on Streamable HTTP, a process of its own that outlives the runs that reach it."""
    log, port = tmp_path / "server.jsonl", free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "tasks.py"), "http", str(port), "--log", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(10)


def test_a_long_call_runs_as_a_task_its_handle_journaled_and_its_progress_told(tmp_path):
    log, told = tmp_path / "server.jsonl", []
    model = ScriptedModel([call("tasks__slow", seconds=1.5, label="index"), call("submit", answer="done")])
    spec = RunSpec(Task(prompt="Index."), model, HarnessPolicy(mcp=[served(log)]), tmp_path / "runs")
    spec.listeners = (lambda e: told.append(e) if isinstance(e, ToolProgress) else None,)
    summary, run_dir = start(spec)
    assert summary.stop_reason == "submitted"
    journal = events(run_dir)
    [intent] = [e for e in journal if e["type"] == "tool_intent" and e["tool"] == "tasks__slow"]
    [task] = [e for e in journal if e["type"] == "task_created"]
    [observed] = [e for e in journal if e["type"] == "tool_observed" and e["observation"]["tool"] == "tasks__slow"]
    assert intent["seq"] < task["seq"] < observed["seq"]  # the handle is on the record before the harness waits
    assert task["call_id"] == intent["call_id"] and task["server"] == "tasks" and task["status"] == "working"
    assert said(observed["observation"]["text"], "tasks") == "index finished after 1.5 s"
    assert len(seen(log, "call")) == 1 and len(seen(log, "get")) >= 3  # one call, then polling
    assert any("% done" in e.text for e in told) and all(e.tool == "tasks__slow" for e in told)
    assert not [e for e in journal if e["type"] == "tool_progress"]  # told, never written


def test_a_task_past_the_tool_timeout_is_cancelled_on_its_server(tmp_path):
    log = tmp_path / "server.jsonl"
    with with_mcp([served(log)], Registry()) as tools:
        slow = tools.get("tasks__slow")
        started = time.monotonic()
        result = slow.run(slow.args.model_validate({"seconds": 60}), ToolContext(sandbox=None, timeout_s=1.0))
    assert time.monotonic() - started < 15
    assert result.timed_out and "asked the server to cancel it (the server acknowledged)" in result.text
    [task] = seen(log, "task")
    assert seen(log, "cancel") == [{"event": "cancel", "task_id": task["task_id"]}]


def test_a_stop_abandons_the_call_and_cancels_its_task(tmp_path):
    log = tmp_path / "server.jsonl"
    with with_mcp([served(log)], Registry()) as tools:
        slow = tools.get("tasks__slow")
        threading.Timer(1.0, interrupts.request, ("SIGTERM",)).start()
        try:
            with pytest.raises(interrupts.Abandoned):
                slow.run(slow.args.model_validate({"seconds": 60}), ToolContext(sandbox=None, timeout_s=60))
        finally:
            interrupts.clear()
    [task] = seen(log, "task")
    assert seen(log, "cancel") == [{"event": "cancel", "task_id": task["task_id"]}]


def test_a_server_on_the_2025_handshake_gets_no_task_handle(tmp_path):
    log = tmp_path / "server.jsonl"
    legacy = served(log).model_copy(update={"protocol": "legacy"})
    with with_mcp([legacy], Registry()) as tools:
        slow = tools.get("tasks__slow")
        result = slow.run(slow.args.model_validate({"seconds": 60}), ToolContext(sandbox=None, timeout_s=10))
    assert result.ok and "job ran without a task" in result.text and not seen(log, "task")


def harness_run(tmp_path: Path, url_or_server: str | McpServer, replies: list, **policy) -> subprocess.Popen:
    """`harness run` with a scripted model, as a process of its own, its heartbeat every half second."""
    server = url_or_server if isinstance(url_or_server, McpServer) else McpServer(name="tasks", url=url_or_server)
    settings = HarnessPolicy(mcp=[server.model_copy(update={"approve": "never"})], **policy)
    (tmp_path / "policy.json").write_text(settings.model_dump_json(exclude_defaults=True))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump([r.model_dump(exclude_none=True) for r in replies]))
    args = ["run", "--model", f"scripted:{tmp_path / 'script.yaml'}", "--task", "Index the repository."]
    args += ["--policy", str(tmp_path / "policy.json"), "--out", str(tmp_path / "runs")]
    env = {**os.environ, "HARNESS_HEARTBEAT_S": "0.5"}
    return subprocess.Popen([HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def kill_once_waiting(proc: subprocess.Popen, runs: Path, within_s: float = 120) -> Path:
    """SIGKILL `proc` once its journal holds a task handle; the run directory."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for journal in runs.rglob("events.jsonl"):
            if '"task_created"' in journal.read_text():
                time.sleep(1.0)  # well inside the wait now
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return journal.parent
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the run never got a task handle")


@pytest.mark.slow  # a `harness run` killed and resumed
def test_a_run_killed_while_its_task_runs_resumes_by_following_the_same_task(tmp_path, http_tasks):
    url, log = http_tasks
    replies = [call("tasks__slow", seconds=8, label="index"), call("submit", answer="indexed")]
    proc = harness_run(tmp_path, url, replies)
    run_dir = kill_once_waiting(proc, tmp_path / "runs")
    lines = proc.stdout.read() if proc.stdout else ""
    assert "tasks__slow: index: " in lines  # the CLI's progress line said how far the task had got
    done = resume(run_dir)
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert any("re-attaches" in note for note in done.notes)
    assert len(seen(log, "call")) == 1  # the server saw one call: the resumed run followed its task
    journal = read_events(run_dir)
    [task] = [e for e in journal if e.type == "task_created"]
    assert len([e for e in journal if e.type == "tool_intent" and e.tool == "tasks__slow"]) == 1
    [observed] = [e for e in journal if e.type == "tool_observed" and e.observation.tool == "tasks__slow"]
    assert observed.observation.status == "ok" and said(observed.observation.text, "tasks") == (
        "index finished after 8 s"
    )
    assert {g["task_id"] for g in seen(log, "get")} == {task.task_id}


@pytest.mark.slow  # a `harness run` killed and resumed
def test_a_task_gone_when_the_run_resumes_is_one_clear_observation(tmp_path):
    """A stdio server ends with the harness that started it, and its tasks with it."""
    log = tmp_path / "server.jsonl"
    replies = [call("tasks__slow", seconds=60), call("submit", answer="gave up")]
    proc = harness_run(tmp_path, served(log), replies)
    run_dir = kill_once_waiting(proc, tmp_path / "runs")
    done = resume(run_dir)
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    [observed] = [e for e in read_events(run_dir) if e.type == "tool_observed" and e.observation.tool == "tasks__slow"]
    text = observed.observation.text
    assert observed.observation.status == "error"
    assert "the server no longer knows that task" in text and "The call was not repeated" in text
    assert len(seen(log, "call")) == 1  # neither server was called twice


def test_a_task_asking_a_question_waits_for_a_person_and_goes_on_with_the_answer(tmp_path, http_tasks):
    url, log = http_tasks
    server = McpServer(name="tasks", url=url, approve="never")
    model = ScriptedModel([call("tasks__wait_for_input"), call("submit", answer="done")])
    policy = HarnessPolicy(mcp=[server], approval=ApprovalPolicy(elicitation="ask"))
    summary, run_dir = start(RunSpec(Task(prompt="Run the job."), model, policy, tmp_path / "runs"))
    assert summary.stop_reason == "awaiting_approval"
    [asked] = [e for e in read_events(run_dir) if e.type == "input_requested"]
    assert asked.question["message"] == "Which word should the job use?"
    record_decision(run_dir, asked.input_id, True, answer={"answer": "blue"})
    done = resume(run_dir, model=ScriptedModel([call("tasks__wait_for_input"), call("submit", answer="done")]))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    [observed] = [e for e in read_events(run_dir) if e.type == "tool_observed"][:1]
    assert said(observed.observation.text, "tasks") == "the job used 'blue'"
    assert len(seen(log, "call")) == 1 and [u["responses"] for u in seen(log, "update")] == [
        {"word": {"action": "accept", "content": {"answer": "blue"}}}
    ]


def test_a_run_with_parallel_task_calls_journals_each_handle(tmp_path):
    log = tmp_path / "server.jsonl"
    from tests.agent.helpers import calls

    model = ScriptedModel(
        [
            calls(("tasks__slow", {"seconds": 0.5, "label": "a"}), ("tasks__slow", {"seconds": 0.5, "label": "b"})),
            call("submit", answer="done"),
        ]
    )
    policy = HarnessPolicy(mcp=[served(log)], dispatch=DispatchPolicy(parallel="all"))
    summary, run_dir = start(RunSpec(Task(prompt="Both."), model, policy, tmp_path / "runs"))
    assert summary.stop_reason == "submitted"
    handles = [e for e in events(run_dir) if e["type"] == "task_created"]
    assert len({h["task_id"] for h in handles}) == 2 and len({h["call_id"] for h in handles}) == 2
