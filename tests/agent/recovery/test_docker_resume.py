"""A Docker run killed with SIGKILL resumes where it was: the same container, its files as the run left them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agent.journal.store import read_events
from sandboxes.docker_options import RUN_LABEL
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)

HARNESS = str(Path(sys.executable).parent / "harness")


def script(tmp_path: Path, steps: list[str]) -> Path:
    replies = [{"tool_calls": [{"name": "shell", "arguments": {"command": c}}]} for c in steps]
    replies.append({"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]})
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(replies))
    return path


def harness(*args: str) -> subprocess.Popen:
    return subprocess.Popen([HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def resumed(run_dir: Path) -> list:
    """`harness resume RUN_DIR` to its end; the run's events."""
    done = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return read_events(run_dir)


def last_shell_output(events: list) -> str:
    return [e.observation.text for e in events if e.type == "tool_observed" and e.observation.tool == "shell"][-1]


def kill_when(
    proc: subprocess.Popen, out: Path, command: str, within_s: float = 300, kind: str = "tool_intent"
) -> Path:
    """SIGKILL `proc` once its journal shows `command` running (a direct call's, or with `kind` inner_intent a
    program's); return the run directory."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for journal in out.rglob("events.jsonl"):
            lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
            if any(e["type"] == kind and e["arguments"].get("command") == command for e in lines):
                time.sleep(0.5)  # inside the command now
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return journal.parent
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the run never began {command!r}")


def containers_of(client, run_dir: Path) -> list:
    return client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.resolve()}"}, ignore_removed=True)


def test_a_killed_swe_run_resumes_in_its_task_image_with_testbed_as_it_was(docker_ready, tmp_path):  # noqa: F811
    steps = ["echo changed-by-the-run >> README.md && git status --short", "sleep 60", "tail -n 1 README.md"]
    proc = harness(
        "swe",
        "--suite",
        "builtin",
        "--only",
        "acme__configlite-41",
        "--model",
        f"scripted:{script(tmp_path, steps)}",
        "--out",
        str(tmp_path / "out"),
    )
    run_dir = kill_when(proc, tmp_path / "out", "sleep 60")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["sandbox"] == "docker" and info["workdir"] == "/testbed" and info["image"] != "harness-base:bookworm-1"

    events = resumed(run_dir)
    opened = [e for e in events if e.type == "sandbox_opened"]
    assert [e.how for e in opened] == ["started", "reconnected"] and opened[0].container_id == opened[1].container_id
    last = last_shell_output(events)
    assert last.strip() == "changed-by-the-run"  # /testbed as the killed process left it
    assert events[-1].type == "run_stopped" and events[-1].reason == "submitted"
    assert containers_of(docker_ready, run_dir) == []  # nothing left running once the run is over


def test_a_docker_run_whose_container_is_gone_comes_back_from_its_checkpoint(docker_ready, tmp_path):  # noqa: F811
    steps = ["echo one > a.txt", "echo two >> a.txt", "sleep 60", "cat a.txt"]
    policy = tmp_path / "policy.toml"
    policy.write_text('extends = "default"\n[checkpoint]\nsnapshot_every = 1\n')
    proc = harness(
        "run",
        "--task",
        "Write two lines to a file.",
        "--sandbox",
        "docker",
        "--policy",
        str(policy),
        "--model",
        f"scripted:{script(tmp_path, steps)}",
        "--out",
        str(tmp_path / "out"),
    )
    run_dir = kill_when(proc, tmp_path / "out", "sleep 60")
    for container in containers_of(docker_ready, run_dir):
        container.remove(force=True, v=True)  # the machine rebooted, say

    events = resumed(run_dir)
    assert [e.how for e in events if e.type == "sandbox_opened"] == ["started", "checkpoint"]
    last = last_shell_output(events)
    assert last.split() == ["one", "two"]
    assert containers_of(docker_ready, run_dir) == []


def test_a_program_resumed_in_a_container_from_its_checkpoint_reports_only_the_files_it_changed(
    docker_ready,  # noqa: F811
    tmp_path,
):
    """A checkpoint gives the files back with their times cut to whole seconds: the program that was running
    when the process was killed runs again and reports no file it did not change."""
    programs = ["open('a.txt', 'w').write('one\\n')", "print(shell(command='sleep 60'))"]
    replies = [{"tool_calls": [{"name": "run_code", "arguments": {"code": p}}]} for p in programs]
    replies.append({"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]})
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(replies))
    policy = tmp_path / "policy.toml"
    policy.write_text('extends = "default"\n[dispatch]\nmode = "code"\n[checkpoint]\nsnapshot_every = 1\n')
    proc = harness(
        "run",
        "--task",
        "Write a file, then wait.",
        "--sandbox",
        "docker",
        "--policy",
        str(policy),
        "--model",
        f"scripted:{tmp_path / 'script.yaml'}",
        "--out",
        str(tmp_path / "out"),
    )
    run_dir = kill_when(proc, tmp_path / "out", "sleep 60", kind="inner_intent")
    for container in containers_of(docker_ready, run_dir):
        container.remove(force=True, v=True)

    events = resumed(run_dir)
    assert [e.how for e in events if e.type == "sandbox_opened"] == ["started", "checkpoint"]
    [first, again] = [e.observation.text for e in events if e.type == "tool_observed" and e.step in (1, 2)]
    assert first.endswith("[files: created a.txt]")
    assert again.endswith("[files: none changed]"), again
    assert containers_of(docker_ready, run_dir) == []


@pytest.mark.parametrize("events_kept", [0, 1])  # nothing journaled, or only the container's sandbox_opened
def test_a_docker_run_killed_before_it_began_resumes_in_one_container_and_leaves_none(
    docker_ready,  # noqa: F811  (the fixture)
    tmp_path,
    events_kept,
):
    from agent.journal.lines import decode, encode
    from agent.models.scripted import ScriptedModel
    from agent.resume import resume
    from agent.run.task import Task
    from agent.session import RunSpec, SandboxSpec, open_sandbox, start
    from core.policy import HarnessPolicy

    task = Task(prompt="Read the file.", files={"a.txt": "from the task\n"})
    replies = yaml.safe_load(script(tmp_path, ["cat a.txt"]).read_text())
    _, run_dir = start(
        RunSpec(
            task,
            ScriptedModel.from_file(script(tmp_path, ["cat a.txt"])),
            HarnessPolicy(),
            tmp_path / "runs",
            sandbox=SandboxSpec(kind="docker"),
        )
    )
    assert len(replies) == 2 and containers_of(docker_ready, run_dir) == []
    # The process died as it began: its container started (perhaps journaled), no step taken yet.
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    assert lines[0].startswith('{"seq":1') and '"sandbox_opened"' in lines[0]
    (run_dir / "events.jsonl").write_text("".join(lines[:events_kept]))
    (run_dir / "summary.json").unlink()
    stray = open_sandbox(SandboxSpec(kind="docker"), run_dir / "workspace")
    if events_kept:
        opened = decode(lines[0].encode()).model_copy(update={"container_id": stray.container_id})
        (run_dir / "events.jsonl").write_bytes(encode(opened))

    done = resume(run_dir, model=ScriptedModel.from_file(script(tmp_path, ["cat a.txt"])))
    assert done.summary is not None and done.summary.stop_reason == "submitted", done.notes
    [observed] = [
        e.observation.text for e in read_events(run_dir) if e.type == "tool_observed" and e.observation.tool == "shell"
    ]
    assert observed.strip() == "from the task"  # the task's files are there whichever container it went on in
    assert containers_of(docker_ready, run_dir) == []


def test_resuming_a_finished_docker_run_removes_the_container_its_killed_process_left(docker_ready, tmp_path):  # noqa: F811
    from agent.models.scripted import ScriptedModel
    from agent.resume import resume
    from agent.run.task import Task
    from agent.session import RunSpec, SandboxSpec, open_sandbox, start
    from core.policy import HarnessPolicy

    _, run_dir = start(
        RunSpec(
            Task(prompt="Say hi."),
            ScriptedModel.from_file(script(tmp_path, ["echo hi"])),
            HarnessPolicy(),
            tmp_path / "runs",
            sandbox=SandboxSpec(kind="docker"),
        )
    )
    # Killed between its run_stopped event and removing its container: the container outlives it.
    stray = open_sandbox(SandboxSpec(kind="docker"), run_dir / "workspace")
    assert [c.id for c in containers_of(docker_ready, run_dir)] == [stray.container_id]

    done = resume(run_dir)
    assert done.summary is None and "nothing to resume" in done.notes[-1]
    assert any("left behind" in n for n in done.notes)
    assert containers_of(docker_ready, run_dir) == []
