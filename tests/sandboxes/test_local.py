import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandboxes.local import LocalSandbox

ROOT = Path(__file__).resolve().parents[2]


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


def _gone(pid: int, wait_s: float = 5) -> bool:
    """True once `pid` has ended (a zombie counts as ended); waits a little for the kill to land."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_close_ends_background_children_of_commands(tmp_path):
    box = LocalSandbox(tmp_path / "ws")
    pid = int(box.exec("sleep 300 >/dev/null 2>&1 & echo $!", timeout=5).output)
    assert not _gone(pid, wait_s=0.2)  # the command returned; its child runs on
    box.close()
    assert _gone(pid)
    assert (tmp_path / "ws.groups").read_text() == ""


OWNER = """
import sys
from sandboxes.local import LocalSandbox
box = LocalSandbox(sys.argv[1])
box.exec("sleep 300 & echo $! > bg.pid; echo started > started.txt; sleep 300; echo late > late.txt", timeout=600)
"""


def test_commands_of_a_sigkilled_owner_are_ended_by_the_next_sandbox_on_its_workdir(tmp_path):
    ws = tmp_path / "ws"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(ws)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    deadline = time.monotonic() + 30
    while not (ws / "started.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    background = int((ws / "bg.pid").read_text())
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert not _gone(background, wait_s=0.5)  # the harness is gone; its command is not
    [(owner_pid, pgid, _token)] = [line.split() for line in (ws.parent / "ws.groups").read_text().splitlines()]
    assert int(owner_pid) == owner.pid

    other = LocalSandbox(tmp_path / "elsewhere")  # another run's sandbox: leaves it alone
    assert other.ended_leftovers == [] and not _gone(background, wait_s=0.2)
    resumed = LocalSandbox(ws)
    assert resumed.ended_leftovers == [int(pgid)]
    assert _gone(background)
    assert (ws.parent / "ws.groups").read_text() == ""
    time.sleep(0.5)
    assert not (ws / "late.txt").exists()  # the rest of the old command never ran
    assert resumed.exec("echo fresh", timeout=5).output == "fresh\n"
    resumed.close()


def test_a_command_abandoned_on_a_signal_is_killed_with_its_children(tmp_path):
    import threading

    from core import interrupts

    sb = LocalSandbox(tmp_path / "w")
    threading.Timer(0.3, interrupts.request, ["SIGTERM"]).start()
    start = time.monotonic()
    try:
        with pytest.raises(interrupts.Abandoned):
            sb.exec("(sleep 2; echo late > late.txt) & sleep 30", timeout=60)
    finally:
        interrupts.clear()
    assert time.monotonic() - start < 3
    time.sleep(2.5)
    assert not (tmp_path / "w" / "late.txt").exists()
    sb.close()


def test_binary_output_reaches_the_model_as_text(tmp_path):
    flood = "import os, sys; sys.stdout.buffer.write(os.urandom(3000).replace(b'\\n', b''))"
    r = LocalSandbox(tmp_path).exec(f'{sys.executable} -c "{flood}"; echo; echo end', timeout=10)
    assert r.output.startswith("[binary output: ") and r.output.endswith(" to look at it]\nend\n")
