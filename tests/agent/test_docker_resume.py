"""A Docker run killed with SIGKILL resumes where it was: the same container, its files as the run left them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from agent.journal import read_events
from sandboxes.docker_options import RUN_LABEL
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)

HARNESS = str(Path(sys.executable).parent / "harness")


def script(tmp_path: Path, steps: list[str]) -> Path:
    replies = [{"tool_calls": [{"name": "shell", "arguments": {"command": c}}]} for c in steps]
    replies.append({"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]})
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(replies))
    return path


def kill_when(proc: subprocess.Popen, out: Path, command: str, within_s: float = 300) -> Path:
    """SIGKILL `proc` once its journal shows `command` running; return the run directory."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for journal in out.rglob("events.jsonl"):
            lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
            if any(e["type"] == "tool_intent" and e["arguments"].get("command") == command for e in lines):
                time.sleep(0.5)  # inside the command now
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return journal.parent
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the run never began {command!r}")


def containers_of(client, run_dir: Path) -> list:
    return client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.resolve()}"})


def test_a_killed_swe_run_resumes_in_its_task_image_with_testbed_as_it_was(docker_ready, tmp_path):  # noqa: F811
    steps = ["echo changed-by-the-run >> README.md && git status --short", "sleep 60", "tail -n 1 README.md"]
    proc = subprocess.Popen([HARNESS, "swe", "--suite", "builtin", "--only", "acme__configlite-41",
                             "--model", f"scripted:{script(tmp_path, steps)}", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run_dir = kill_when(proc, tmp_path / "out", "sleep 60")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["sandbox"] == "docker" and info["workdir"] == "/testbed" and info["image"] != "harness-base:bookworm-1"

    resumed = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = read_events(run_dir)
    opened = [e for e in events if e.type == "sandbox_opened"]
    assert [e.how for e in opened] == ["started", "reconnected"] and opened[0].container_id == opened[1].container_id
    last = [e.observation.text for e in events if e.type == "tool_observed" and e.observation.tool == "shell"][-1]
    assert last.strip() == "changed-by-the-run"  # /testbed as the killed process left it
    assert events[-1].type == "run_stopped" and events[-1].reason == "submitted"
    assert containers_of(docker_ready, run_dir) == []  # nothing left running once the run is over


def test_a_docker_run_whose_container_is_gone_comes_back_from_its_checkpoint(docker_ready, tmp_path):  # noqa: F811
    steps = ["echo one > a.txt", "echo two >> a.txt", "sleep 60", "cat a.txt"]
    policy = tmp_path / "policy.toml"
    policy.write_text('extends = "default"\n[checkpoint]\nsnapshot_every = 1\n')
    proc = subprocess.Popen([HARNESS, "run", "--task", "Write two lines to a file.", "--sandbox", "docker", "--policy", str(policy),
                             "--model", f"scripted:{script(tmp_path, steps)}", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run_dir = kill_when(proc, tmp_path / "out", "sleep 60")
    for container in containers_of(docker_ready, run_dir):
        container.remove(force=True, v=True)  # the machine rebooted, say

    resumed = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = read_events(run_dir)
    assert [e.how for e in events if e.type == "sandbox_opened"] == ["started", "checkpoint"]
    last = [e.observation.text for e in events if e.type == "tool_observed" and e.observation.tool == "shell"][-1]
    assert last.split() == ["one", "two"]
    assert containers_of(docker_ready, run_dir) == []
