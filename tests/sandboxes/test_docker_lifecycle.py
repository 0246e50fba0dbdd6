"""Liveness, death from outside, close and prune: no container outlives its sandbox."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from docker.errors import APIError, NotFound
from typer.testing import CliRunner

from cli.sandbox import app
from sandboxes.base import SandboxDead
from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import LABEL, DockerOptions

ROOT = Path(__file__).resolve().parents[2]


def _exists(client, container_id: str) -> bool:
    try:
        client.containers.get(container_id)
        return True
    except NotFound:
        return False


def test_close_removes_the_container_and_ends_the_sandbox(docker_ready):
    sb = DockerSandbox.start(client=docker_ready)
    assert sb.alive()
    sb.close()
    sb.close()  # twice is fine
    assert not _exists(docker_ready, sb.container.id)
    assert not sb.alive()
    with pytest.raises(SandboxDead, match="closed"):
        sb.exec("true", timeout=5)


def test_killed_from_outside_between_commands(sandbox):
    sandbox.container.kill()
    start = time.monotonic()
    assert not sandbox.alive()
    assert time.monotonic() - start < 1
    with pytest.raises(SandboxDead, match="killed or stopped from outside"):
        sandbox.exec("true", timeout=5)


def test_killed_from_outside_mid_command(sandbox):
    threading.Timer(0.5, sandbox.container.kill).start()
    start = time.monotonic()
    with pytest.raises(SandboxDead, match=r"stopped while running 'sleep 30'.*exit code 137"):
        sandbox.exec("sleep 30", timeout=60)
    assert time.monotonic() - start < 5


def test_removed_from_outside(sandbox):
    sandbox.container.remove(force=True, v=True)
    with pytest.raises(SandboxDead, match="was removed"):
        sandbox.exec("true", timeout=5)


@pytest.mark.serial  # its prune would remove a container another test's killed run left for its resume
def test_prune_removes_containers_of_crashed_runs_only(docker_ready):
    crash = "from sandboxes.docker import DockerSandbox; import os; print(DockerSandbox.start().name, flush=True); os._exit(1)"
    orphan = subprocess.run(
        [sys.executable, "-c", crash], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    assert orphan.startswith("harness-")
    assert docker_ready.containers.get(orphan)  # left behind by the "crash"
    with DockerSandbox.start(client=docker_ready) as live:
        result = CliRunner().invoke(app, ["prune"])
        assert result.exit_code == 0, result.output
        assert f"removed {orphan}" in result.output
        assert not _exists(docker_ready, orphan)
        assert live.alive()  # its owner (this process) is still running
        assert live.exec("echo ok", timeout=5).output == "ok\n"


def test_a_container_that_fails_to_start_leaves_nothing_behind(docker_ready):
    with pytest.raises(APIError, match="invalid tmpfs option"):
        DockerSandbox.start(DockerOptions(tmpfs={"/tmp": "rw,bogus=1"}), client=docker_ready)
    mine = {"label": [LABEL, f"harness.pid={os.getpid()}"]}
    assert not docker_ready.containers.list(all=True, filters=mine, ignore_removed=True)
