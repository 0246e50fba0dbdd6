"""Files go in and out as tar archives, byte-exact, under any name."""

import hashlib
import os

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
    with pytest.raises(PermissionError):
        sandbox.write_file("/etc/harness.txt", b"x")


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
