"""A run's container outlives a killed process: reattached, recreated from a checkpoint, pruned only when its run is dead."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docker.errors import NotFound

from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import RUN_LABEL
from sandboxes.docker_runs import (
    SandboxGone,
    checkpoint,
    checkpoints,
    discard_checkpoints,
    prune,
    reattach,
    run_alive,
)
from sandboxes.docker_shells import ShellState

ROOT = Path(__file__).resolve().parents[2]

# A harness stand-in: it holds the run's journal lock as agent/journal/store.py does, starts the
# run's sandbox, leaves state behind, and is SIGKILLed in the middle of a long command.
OWNER = """
import fcntl, json, sys
from sandboxes.docker import DockerSandbox
run_dir = sys.argv[1]
journal = open(run_dir + "/events.jsonl", "a")
fcntl.flock(journal.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
box = DockerSandbox.start(run_dir=run_dir)
box.exec("mkdir -p sub && cd sub && export GREETING='hello world' && echo kept > kept.txt", timeout=30)
state = box.shell_state()
print(json.dumps({"id": box.container_id, "cwd": state.cwd, "env": state.env}), flush=True)
box.exec("sleep 300; echo late > late.txt", timeout=600)
"""


def _lock(run_dir: Path):
    f = open(run_dir / "events.jsonl", "a")
    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return f


def _gone(client, container_id: str) -> bool:
    try:
        client.containers.get(container_id)
        return False
    except NotFound:
        return True


@pytest.mark.serial  # its prune would remove a container another test's killed run left for its resume
def test_a_killed_owners_container_is_kept_while_its_run_is_held_and_reconnected_with_its_shell_state(
    docker_ready, tmp_path
):
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    first = json.loads(owner.stdout.readline())
    assert first["cwd"] == "/workspace/sub" and first["env"] == {"GREETING": "hello world"}
    time.sleep(0.5)  # the long command is running
    assert run_alive(tmp_path)
    name = docker_ready.containers.get(first["id"]).name
    assert name not in prune(docker_ready)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert not run_alive(tmp_path)
    container = docker_ready.containers.get(first["id"])
    assert container.status == "running" and container.labels[RUN_LABEL] == str(tmp_path)

    journal = _lock(tmp_path)  # the resuming process holds the run now
    back = reattach(tmp_path, first["id"], ShellState(first["cwd"], first["env"]), client=docker_ready)
    try:
        assert back.how == "reconnected" and back.checkpoint is None
        assert back.sandbox.container_id == first["id"]
        r = back.sandbox.exec(
            "pwd; echo \"$GREETING\"; cat kept.txt; cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 3[0]0'",
            timeout=10,
        )
        assert r.output.splitlines() == ["/workspace/sub", "hello world", "kept", "0"]  # the old command was ended
        assert name not in prune(docker_ready)  # its run is held again
        assert back.sandbox.alive()
        time.sleep(1)
        assert back.sandbox.exec("ls", timeout=10).output == "kept.txt\n"  # its `echo late` never ran
    finally:
        back.sandbox.close()
        journal.close()
    assert _gone(docker_ready, first["id"])


def test_a_removed_container_is_recreated_from_the_newest_of_a_bounded_set_of_checkpoints(docker_ready, tmp_path):
    journal = _lock(tmp_path)
    box = DockerSandbox.start(client=docker_ready, run_dir=tmp_path)
    try:
        for step in (1, 2, 3):
            box.exec(f"echo {step} > step.txt && mkdir -p d && echo {step} > d/s{step}", timeout=10)
            if step == 2:
                box.exec("rm d/s1 && chmod 700 d", timeout=10)
            checkpoint(box, step, keep=2)
        assert [c.step for c in checkpoints(tmp_path, docker_ready)] == [3, 2]
        box.exec("echo after > step.txt", timeout=10)  # after the last checkpoint: lost with the container
        state = ShellState("/workspace/d", {"MODE": "x y"})
        old = box.container_id
        box.container.remove(force=True, v=True)
        back = reattach(tmp_path, old, state, client=docker_ready)
        with back.sandbox as sb:
            assert back.how == "checkpoint" and back.checkpoint.step == 3
            r = sb.exec('pwd; echo "$MODE"; cat ../step.txt; ls; stat -c "%a %u" .; id -u', timeout=10)
            assert r.output.splitlines() == ["/workspace/d", "x y", "3", "s2", "s3", "700 1000", "1000"]
            sb.exec("echo more > more.txt", timeout=10)
            assert sb.exec("cat more.txt", timeout=10).output == "more\n"
            assert sb.container.labels[RUN_LABEL] == str(tmp_path)
    finally:
        box.close()
        journal.close()
    assert len(discard_checkpoints(tmp_path, docker_ready)) == 2
    assert checkpoints(tmp_path, docker_ready) == []
    with pytest.raises(SandboxGone, match="no checkpoint"):
        reattach(tmp_path, None, ShellState("/workspace"), client=docker_ready)


@pytest.mark.serial  # its prune would remove a container another test's killed run left for its resume
def test_prune_removes_dead_runs_only_and_checkpoints_of_deleted_run_folders(docker_ready, tmp_path):
    live_dir, dead_dir, deleted_dir = (tmp_path / n for n in ("live", "dead", "deleted"))
    for d in (live_dir, dead_dir, deleted_dir):
        d.mkdir()
        (d / "events.jsonl").touch()
    journal = _lock(live_dir)
    live = DockerSandbox.start(client=docker_ready, run_dir=live_dir)
    dead = DockerSandbox.start(client=docker_ready, run_dir=dead_dir)  # its journal is not locked: the run is dead
    try:
        kept = checkpoint(dead, 1)  # the run folder remains: `harness resume` may need it
        dropped = checkpoint(DockerSandbox.start(client=docker_ready, run_dir=deleted_dir), 1)
        for path in deleted_dir.iterdir():
            path.unlink()
        deleted_dir.rmdir()
        removed = prune(docker_ready)
        assert dead.name in removed and live.name not in removed
        assert _gone(docker_ready, dead.container_id)
        assert live.exec("echo ok", timeout=10).output == "ok\n"
        assert [c.image for c in checkpoints(dead_dir, docker_ready)] == [kept.image]
        assert checkpoints(deleted_dir, docker_ready) == [] and dropped.step == 1
    finally:
        live.close()
        dead.close()
        journal.close()
        discard_checkpoints(dead_dir, docker_ready)


def test_reattaching_refuses_another_runs_container(docker_ready, tmp_path):
    (tmp_path / "a").mkdir()
    with DockerSandbox.start(client=docker_ready, run_dir=tmp_path / "a") as other:
        with pytest.raises(ValueError, match="belongs to run"):
            reattach(tmp_path / "b", other.container_id, ShellState("/workspace"), client=docker_ready)
        assert other.alive()


def test_without_a_journaled_id_the_runs_newest_running_container_is_reconnected_and_strays_removed(
    docker_ready, tmp_path
):
    journal = _lock(tmp_path)
    older = DockerSandbox.start(client=docker_ready, run_dir=tmp_path)
    newer = DockerSandbox.start(client=docker_ready, run_dir=tmp_path)
    try:
        newer.exec("echo newest > which.txt", timeout=10)
        back = reattach(tmp_path, "0" * 64, ShellState("/workspace"), client=docker_ready)  # the journaled one is gone
        with back.sandbox as sb:
            assert back.how == "reconnected" and sb.container_id == newer.container_id
            assert sb.exec("cat which.txt", timeout=10).output == "newest\n"
            assert _gone(docker_ready, older.container_id)
    finally:
        older.close()
        newer.close()
        journal.close()


def test_run_alive_follows_the_journals_own_lock(tmp_path):
    from agent.journal.store import Journal

    journal = Journal(tmp_path)
    assert run_alive(tmp_path)
    journal.close()
    assert not run_alive(tmp_path)
    assert not run_alive(tmp_path / "no-such-run")


def test_a_launched_runs_container_is_labelled_with_its_run_folder(docker_ready, tmp_path):
    from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
    from agent.run.task import Task
    from agent.session import RunSpec, start
    from core.policy import HarnessPolicy
    from sandboxes.docker import factory

    seen = []

    def look(event):
        if event.type == "tool_observed":
            labelled = [
                c.labels[RUN_LABEL]
                for c in docker_ready.containers.list(filters={"label": RUN_LABEL}, ignore_removed=True)
            ]
            seen.append([run for run in labelled if run.startswith(str(tmp_path))])

    replies = [
        ScriptedReply(tool_calls=[ScriptedCall(name="shell", arguments={"command": "true"})]),
        ScriptedReply(tool_calls=[ScriptedCall(name="submit", arguments={"answer": "done"})]),
    ]
    _summary, run_dir = start(
        RunSpec(
            Task(prompt="x"), ScriptedModel(replies), HarnessPolicy(), tmp_path, sandbox=factory(), listeners=(look,)
        )
    )
    assert seen[0] == [str(run_dir)]
    assert not docker_ready.containers.list(
        all=True, filters={"label": f"{RUN_LABEL}={run_dir}"}, ignore_removed=True
    )  # closed with the run
