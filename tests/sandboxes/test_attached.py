"""Attached processes: a byte channel both ways, no network, and nothing left running once closed."""

import time

import pytest

from sandboxes.local import LocalSandbox, _members, _read_groups, no_network_prefix

ECHO = ["python3", "-c", "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line.upper()); sys.stdout.flush()"]


def until_line(process, timeout=20.0) -> bytes:
    out, deadline = b"", time.monotonic() + timeout
    while b"\n" not in out and time.monotonic() < deadline:
        out += process.receive(1.0)
    return out


def test_local_attached_talks_both_ways_and_is_killed_on_close(tmp_path):
    box = LocalSandbox(tmp_path / "w")
    process = box.attach(ECHO)
    process.send(b"hello\n")
    assert until_line(process) == b"HELLO\n"
    pid = process.proc.pid
    assert any(pgid == pid for _, pgid, _ in _read_groups(box.groups_file))
    process.close()
    assert not _members(pid)
    assert not any(pgid == pid for _, pgid, _ in _read_groups(box.groups_file))
    box.close()


def test_local_attached_ends_with_eof(tmp_path):
    box = LocalSandbox(tmp_path / "w")
    process = box.attach(["sh", "-c", "echo bye"])
    assert until_line(process) == b"bye\n"
    with pytest.raises(EOFError):
        for _ in range(20):
            process.receive(1.0)
    process.close()
    box.close()


def test_local_attached_has_no_network_where_the_kernel_allows(tmp_path):
    if not no_network_prefix():
        pytest.skip("this kernel gives no unprivileged network namespace")
    box = LocalSandbox(tmp_path / "w")
    process = box.attach(["python3", "-c", "import socket\nprint(socket.if_nameindex())"])
    assert until_line(process) == b"[(1, 'lo')]\n"
    process.close()
    box.close()


def test_docker_attached_talks_both_ways_and_is_killed_on_close(sandbox):
    process = sandbox.attach(ECHO)
    process.send(b"hello\n")
    assert until_line(process) == b"HELLO\n"
    pid = process.pid
    process.close()
    left = sandbox.exec(f"test -d /proc/{pid} && echo alive || echo gone", timeout=10)
    assert left.output.strip() == "gone"


def test_docker_attached_that_cannot_start_says_why(sandbox):
    from sandboxes.base import SandboxDead

    process = sandbox.attach(["no-such-program"])
    out = b""
    with pytest.raises(EOFError):
        for _ in range(20):
            out += process.receive(1.0)
    assert b"no-such-program" in out
    process.close()
    sandbox.close()
    with pytest.raises(SandboxDead):
        sandbox.attach(ECHO)
