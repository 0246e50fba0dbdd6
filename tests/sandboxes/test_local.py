import os
import time

from sandboxes.local import LocalSandbox


def test_timeout_kills_the_whole_process_group(tmp_path):
    box = LocalSandbox(tmp_path)
    start = time.monotonic()
    result = box.exec("sleep 60 & sleep 60; echo never", timeout=0.5)
    assert result.timed_out and result.exit_code is None and time.monotonic() - start < 5
    assert box.exec("echo next", timeout=5).output == "next\n"


def test_output_is_capped(tmp_path):
    box = LocalSandbox(tmp_path, output_cap=10_000)
    result = box.exec("yes | head -c 5000000", timeout=20)
    assert result.output_capped and len(result.output) == 10_000 and result.exit_code == 0


def test_host_secrets_do_not_reach_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    box = LocalSandbox(tmp_path)
    assert "sk-secret" not in box.exec("env", timeout=5).output


def test_files_round_trip_bytes(tmp_path):
    box = LocalSandbox(tmp_path)
    data = bytes(range(256)) * 10
    box.write_file("deep/dir/bin.dat", data)
    assert box.read_file("deep/dir/bin.dat") == data
    assert os.path.exists(tmp_path / "deep/dir/bin.dat")
    box.close()
    assert not box.alive()
