"""Abuse from inside the sandbox, against the real engine: every one contained, with a message that says what happened."""

import errno
import os
import time

import pytest

from sandboxes.base import SandboxDead
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import DockerUnavailable
from sandboxes.docker_diagnosis import container_state
from sandboxes.docker_options import LABEL, DockerOptions


def test_file_tools_have_exactly_the_shells_permissions(sandbox):
    for secret in ("/etc/shadow", "/root/.bashrc"):
        assert sandbox.exec(f"cat {secret}", timeout=10).exit_code != 0
        with pytest.raises(PermissionError, match="as the sandbox user"):
            sandbox.read_file(secret)
    sandbox.exec("echo private > mine.txt && chmod 000 mine.txt && mkdir locked && chmod 500 locked", timeout=10)
    with pytest.raises(PermissionError, match="permission denied"):
        sandbox.read_file("mine.txt")
    with pytest.raises(PermissionError, match="permission denied"):
        sandbox.write_file("locked/new.txt", b"x")
    with pytest.raises(PermissionError, match="read-only root filesystem"):
        sandbox.write_file("/etc/passwd", b"root::0:0::/root:/bin/bash\n")
    with pytest.raises(IsADirectoryError):
        sandbox.read_file("locked")
    # Nothing was left behind by the failed writes, and the user's own files still work.
    assert sandbox.exec("ls -A; ls -A locked | wc -l", timeout=10).output == "locked\nmine.txt\n0\n"
    sandbox.write_file("ok.txt", b"fine")
    assert sandbox.read_file("ok.txt") == b"fine"


def test_functions_defined_by_commands_do_not_change_what_file_tools_do(sandbox):
    sandbox.exec("cat() { echo hijacked; }; export -f cat; mkdir() { return 1; }", timeout=10)
    sandbox.write_file("sub/a.txt", b"real bytes")
    assert sandbox.read_file("sub/a.txt") == b"real bytes"


def test_the_workspace_has_a_disk_quota_and_says_when_it_is_full(docker_ready):
    with DockerSandbox.start(DockerOptions(disk="32m"), client=docker_ready) as sb:
        assert sb.exec("stat -f -c %T /workspace", timeout=10).output == "tmpfs\n"  # not the host's disk
        r = sb.exec("head -c 100000000 /dev/zero > big", timeout=60)
        assert r.exit_code != 0
        assert "No space left on device" in r.output
        assert "[sandbox: the workspace /workspace is full: its quota is 32m; delete files to make room]" in r.output
        with pytest.raises(OSError) as e:
            sb.write_file("more.bin", b"x" * (8 << 20))
        assert e.value.errno == errno.ENOSPC and "full" in str(e.value)
        sb.exec("rm -f big", timeout=10)
        full_tmp = sb.exec("head -c 300000000 /dev/zero > /tmp/big", timeout=60)
        assert (
            "No space left on device" in full_tmp.output and "[sandbox:" not in full_tmp.output
        )  # /tmp, not the workspace
        sb.exec("rm -f /tmp/big", timeout=10)
        sb.write_file("more.bin", b"x" * (8 << 20))
        assert sb.exec("stat -c %s more.bin", timeout=10).output == f"{8 << 20}\n"


def test_the_image_workdir_is_copied_into_the_quota_workspace(docker_ready):
    with DockerSandbox.start(DockerOptions(workdir="/etc/apt", disk="16m"), client=docker_ready) as sb:
        listing = sb.exec("ls; stat -f -c %T .; test -w . && echo writable", timeout=10).output.split()
        assert "sources.list.d" in listing and "tmpfs" in listing and "writable" in listing


def test_a_fork_bomb_that_returns_at_once_is_reported_and_the_next_command_is_clean(docker_ready):
    with DockerSandbox.start(DockerOptions(pids=64), client=docker_ready) as sb:
        sb.exec("cd /tmp && export KEPT=1", timeout=10)
        r = sb.exec(":(){ :|:& };:", timeout=20)
        assert "[sandbox: the process limit (64 processes) was reached:" in r.output
        assert "Everything this shell had started was killed" in r.output
        after = sb.exec('echo clean; echo "$PWD $KEPT"; ls /proc | grep -c "^[0-9]"', timeout=20)
        lines = after.output.splitlines()
        assert lines[:2] == ["clean", "/tmp 1"] and int(lines[2]) <= 6
        assert sb.exec("echo still", timeout=10).output == "still\n"


def test_a_background_job_that_is_no_bomb_gets_no_note(sandbox):
    r = sandbox.exec("sleep 30 & echo started", timeout=10)
    assert r.output == "started\n"
    assert sandbox.exec("jobs | wc -l", timeout=10).output == "1\n"  # it still runs


def test_death_after_an_earlier_out_of_memory_kill_is_not_blamed_on_memory(docker_ready):
    with DockerSandbox.start(DockerOptions(memory="256m", disk="16m"), client=docker_ready) as sb:
        assert sb.exec("python3 -c 'b = bytearray(2 * 1024**3)'", timeout=60).exit_code == 137
        assert sb.exec("echo ok", timeout=10).output == "ok\n"
        # The container's idle process runs as the sandbox user: killing it ends the container from inside.
        with pytest.raises(SandboxDead) as e:
            sb.exec("kill -KILL $(cat /proc/1/task/1/children); sleep 5", timeout=30)
        assert "killed or stopped" in str(e.value) and "memory" not in str(e.value)
        # The engine's flag: set once anything in the container was killed for memory.
        assert container_state(sb.api, sb.container_id)["OOMKilled"]


def test_an_image_workdir_larger_than_the_quota_is_refused_clearly_and_leaves_nothing(docker_ready):
    with pytest.raises(
        DockerUnavailable,
        match=r"in /usr/lib could not be copied into the sandbox's workspace of 1m \(.*No space left.*\); raise DockerOptions.disk",
    ):
        DockerSandbox.start(DockerOptions(workdir="/usr/lib", disk="1m"), client=docker_ready)
    assert not docker_ready.containers.list(all=True, filters={"label": [LABEL, f"harness.pid={os.getpid()}"]})


def test_a_bomb_that_goes_off_after_its_command_returned_is_swept_before_the_next_command(docker_ready):
    with DockerSandbox.start(DockerOptions(pids=64), client=docker_ready) as sb:
        r = sb.exec("(sleep 1.5; :(){ :|:& };:) & echo armed", timeout=20)
        assert r.output == "armed\n"  # nothing had happened yet
        time.sleep(3)
        after = sb.exec("echo clean", timeout=20)
        assert after.output.startswith("clean\n")
        assert "[sandbox: since the last command, the process limit (64 processes) was reached:" in after.output
        assert sb.exec("echo still; ls /proc | grep -c '^[0-9]'", timeout=20).output.splitlines()[0] == "still"
