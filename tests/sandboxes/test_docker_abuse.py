"""Abuse from inside the sandbox, against the real engine: every one contained, with a message that says what happened."""

import errno
import os
import time

import pytest

from sandboxes.base import SandboxDead
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import IDLE_UID, DockerUnavailable
from sandboxes.docker_diagnosis import container_state
from sandboxes.docker_options import LABEL, DockerOptions


def test_file_tools_have_exactly_the_shells_permissions_and_say_so_in_one_line(sandbox):
    for secret in ("/etc/shadow", "/root/.bashrc"):
        assert sandbox.exec(f"cat {secret}", timeout=10).exit_code != 0
        with pytest.raises(PermissionError) as e:
            sandbox.read_file(secret)
        assert e.value.strerror == f"permission denied: {secret} (the sandbox runs as user 1000:1000)"
    sandbox.exec("echo private > mine.txt && chmod 000 mine.txt && mkdir locked && chmod 500 locked", timeout=10)
    with pytest.raises(PermissionError, match="permission denied: /workspace/mine.txt"):
        sandbox.read_file("mine.txt")
    with pytest.raises(PermissionError, match="permission denied: /workspace/locked/new.txt"):
        sandbox.write_file("locked/new.txt", b"x")
    with pytest.raises(OSError) as e:
        sandbox.write_file("/etc/passwd", b"root::0:0::/root:/bin/bash\n")
    assert e.value.errno == errno.EROFS
    assert e.value.strerror == (
        "read-only file system: /etc/passwd (the root filesystem is read-only; write under /workspace or /tmp)"
    )
    with pytest.raises(IsADirectoryError, match="is a directory: /workspace/locked"):
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
        assert e.value.errno == errno.ENOSPC
        assert e.value.strerror == (
            "no space left on device: /workspace/more.bin (the workspace is full: its quota is 32m; "
            "delete files to make room)"
        )
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
        time.sleep(0.5)  # the engine's oom event may come a few ms after the command returned
        assert sb.exec("echo ok", timeout=10).output == "ok\n"
        sb.container.kill()  # its own processes cannot: see the next test
        with pytest.raises(SandboxDead) as e:
            sb.exec("echo gone", timeout=30)
        assert "killed or stopped" in str(e.value) and "memory" not in str(e.value)
        # The engine's flag: set once anything in the container was killed for memory.
        assert container_state(sb.api, sb.container_id)["OOMKilled"]


def test_an_image_workdir_larger_than_the_quota_is_refused_clearly_and_leaves_nothing(docker_ready):
    with pytest.raises(
        DockerUnavailable,
        match=r"in /usr/lib could not be copied into the sandbox's workspace of 1m \(.*No space left.*\); raise DockerOptions.disk",
    ):
        DockerSandbox.start(DockerOptions(workdir="/usr/lib", disk="1m"), client=docker_ready)
    assert not docker_ready.containers.list(
        all=True, filters={"label": [LABEL, f"harness.pid={os.getpid()}"]}, ignore_removed=True
    )


def test_a_bomb_that_goes_off_after_its_command_returned_is_swept_before_the_next_command(docker_ready):
    with DockerSandbox.start(DockerOptions(pids=64), client=docker_ready) as sb:
        r = sb.exec("(sleep 1.5; :(){ :|:& };:) & echo armed", timeout=20)
        assert r.output == "armed\n"  # nothing had happened yet
        time.sleep(3)
        after = sb.exec("echo clean", timeout=20)
        assert after.output.startswith("clean\n")
        assert "[sandbox: since the last command, the process limit (64 processes) was reached:" in after.output
        assert sb.exec("echo still; ls /proc | grep -c '^[0-9]'", timeout=20).output.splitlines()[0] == "still"


def test_killing_every_process_the_user_may_signal_leaves_the_container_and_its_files(sandbox):
    job = sandbox.exec("cd /tmp && export KEPT=1 && f() { echo f; }; sleep 300 & echo $!", timeout=10).output.strip()
    sandbox.write_file("/workspace/a.txt", b"kept")
    idle = sandbox.exec("cat /proc/1/task/1/children", timeout=10).output.split()
    uids = sandbox.exec(f"grep -h ^Uid: /proc/1/status /proc/{idle[0]}/status", timeout=10).output
    assert uids.splitlines() == [f"Uid:\t{IDLE_UID}\t{IDLE_UID}\t{IDLE_UID}\t{IDLE_UID}"] * 2  # not the sandbox user
    # The builtin spares its own shell (Linux never signals the caller of kill(-1)): the shell keeps its state.
    r = sandbox.exec("kill -9 -1", timeout=10)
    assert r.exit_code == 0 and sandbox.alive()
    assert all("Killed" in line for line in r.output.splitlines())  # at most bash's notice of the killed job
    # The background job was killed (dead, if not yet reaped), nothing else.
    dead = f"for i in 1 2 3 4 5 6 7 8 9; do s=$(cut -d' ' -f3 /proc/{job}/stat 2>/dev/null); [ ${{s:-Z}} = Z ] && break; sleep 0.1; done; echo ${{s:-Z}}"
    after = sandbox.exec(f'echo "$PWD $KEPT"; f; {dead}', timeout=10).output.splitlines()
    assert after[-3:] == ["/tmp 1", "f", "Z"]
    assert "Operation not permitted" in sandbox.exec(f"kill -9 1 {idle[0]}", timeout=10).output
    # The file tools' control shell was killed too; the next file operation opens another.
    assert sandbox.read_file("/workspace/a.txt") == b"kept"
    # From a child process, kill(-1) takes the shell as well: a new one replaces it, and the output says so.
    r = sandbox.exec("bash -c 'kill -9 -1'", timeout=10)
    assert r.exit_code == 137 and sandbox.alive()
    assert r.output == (
        "\n[sandbox: the shell was killed (signal 9); the next command runs in a new shell, starting in /tmp: "
        "the old shell's exported variables, shell functions and background jobs are gone]"
    )
    assert sandbox.exec('echo "$PWD ${KEPT:-unset}"', timeout=10).output == "/tmp unset\n"
    sandbox.write_file("b.txt", b"new")
    assert sandbox.exec("cat /workspace/a.txt /workspace/b.txt", timeout=10).output == "keptnew"


def test_a_sandbox_user_with_the_idle_uid_is_refused(docker_ready):
    with pytest.raises(ValueError, match=f"uid {IDLE_UID}, the uid the container's own processes run as"):
        DockerSandbox.start(DockerOptions(user=f"{IDLE_UID}:{IDLE_UID}"), client=docker_ready)
    assert not docker_ready.containers.list(
        all=True, filters={"label": [LABEL, f"harness.pid={os.getpid()}"]}, ignore_removed=True
    )
