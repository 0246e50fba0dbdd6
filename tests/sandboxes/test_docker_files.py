"""Files go in and out as tar archives, byte-exact, under any name."""

import errno
import hashlib
import os
import time

import pytest

NAMES = ["plain.bin", "dir/sub/nested.bin", "ü 日本 spaced.bin", "not-utf8-\udcff\udcfe.bin", "/tmp/in/tmpfs.bin"]


@pytest.mark.parametrize("name", NAMES)
def test_files_round_trip_byte_exact(sandbox, name):
    data = bytes(range(256)) * 64 + os.urandom(100_000)
    sandbox.write_file(name, data)
    assert sandbox.read_file(name) == data
    # The bytes inside the container are the same too, not just what came back.
    digest = sandbox.exec(f"sha256sum < {_quote(name)}", timeout=10).output.split()[0]
    assert digest == hashlib.sha256(data).hexdigest()


def test_written_files_belong_to_the_sandbox_user(sandbox):
    sandbox.write_file("owned.txt", b"x")
    assert sandbox.exec("stat -c %u owned.txt && echo more >> owned.txt", timeout=10).output == "1000\n"
    assert sandbox.read_file("/workspace/owned.txt") == b"xmore\n"


def test_missing_files_and_read_only_paths_raise(sandbox):
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("nope.txt")
    sandbox.exec("export KEPT=1", timeout=10)
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("/tmp/nope.txt")
    assert sandbox.exec('echo "$KEPT"', timeout=10).output == "1\n"  # the same shell
    with pytest.raises(OSError) as e:
        sandbox.write_file("/etc/harness.txt", b"x")
    assert e.value.errno == errno.EROFS and e.value.strerror.startswith("read-only file system: /etc/harness.txt")


def _quote(name: str) -> str:
    return "'" + name.replace("'", "'\\''") + "'"


def test_rewriting_a_file_keeps_its_mode_and_links_are_read_through(sandbox):
    for path in ("./run.sh", "/tmp/run.sh"):
        sandbox.write_file(path, b"#!/bin/sh\necho one\n")
        sandbox.exec(f"chmod 750 {path}", timeout=10)
        sandbox.write_file(path, b"#!/bin/sh\necho two\n")
        assert sandbox.exec(f"stat -c %a {path} && {path}", timeout=10).output == "750\ntwo\n"
    sandbox.exec("ln -s run.sh link.sh && ln -s /tmp/run.sh tmp-link.sh", timeout=10)
    assert sandbox.read_file("link.sh") == b"#!/bin/sh\necho two\n"
    assert sandbox.read_file("tmp-link.sh") == b"#!/bin/sh\necho two\n"


@pytest.mark.parametrize(
    ("op", "path", "kind"),
    [
        ("read", "/workspace/pipe", "named pipe (FIFO)"),
        ("write", "/workspace/pipe", "named pipe (FIFO)"),
        ("read", "/dev/zero", "character device"),
        ("read", "/dev/urandom", "character device"),
    ],
)
def test_a_pipe_or_device_that_never_ends_stops_at_the_callers_timeout(sandbox, op, path, kind):
    sandbox.exec("mkfifo /workspace/pipe && cd /tmp && export KEPT=1", timeout=10)
    start = time.monotonic()
    with pytest.raises(TimeoutError) as e:
        sandbox.read_file(path, timeout=2) if op == "read" else sandbox.write_file(path, b"x", timeout=2)
    assert 2 <= time.monotonic() - start < 5
    verb = "reading" if op == "read" else "writing"
    assert e.value.strerror.startswith(f"timed out after 2 s {verb} {path}: it is a {kind}")
    # Nothing was lost or left: the run's shell kept its state, no staged bytes or cat remain.
    assert sandbox.exec('echo "$PWD $KEPT"; ls -A /workspace', timeout=10).output == "/tmp 1\npipe\n"
    assert sandbox.exec("grep -lx cat /proc/[0-9]*/comm | wc -l", timeout=10).output == "0\n"
    sandbox.write_file("after.txt", b"fine")
    assert sandbox.read_file("after.txt") == b"fine"


def test_a_sandbox_whose_device_read_timed_out_closes_at_once(docker_ready):
    """The timed-out read's shell goes with its stream: a stream left open, its output unread, held the
    container's removal in the engine for 20 s."""
    from docker.errors import NotFound

    from sandboxes.docker import DockerSandbox

    sandbox = DockerSandbox.start(client=docker_ready)
    with pytest.raises(TimeoutError):
        sandbox.read_file("/dev/zero", timeout=2)
    start = time.monotonic()
    sandbox.close()
    assert time.monotonic() - start < 10
    with pytest.raises(NotFound):
        docker_ready.containers.get(sandbox.container.id)
