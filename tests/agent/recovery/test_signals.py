"""SIGTERM and SIGINT (Ctrl-C) stop a run gracefully, in both sandboxes: the call in flight is abandoned (or, with
checkpoint.on_signal = "finish", run to its end), the stop, the snapshot and the summary are written, the container
is removed (its workspace kept as a checkpoint image for the resume), the command exits 143 or 130; the run then
resumes, and the resumed run replays with no divergence. Each test runs `harness` as a real process and signals it
in the middle of a tool call, as a process manager or a person at a terminal would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.recorded.replay import replay
from core.events import RunResumed, ToolIntent, ToolObserved
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)

pytestmark = pytest.mark.slow  # each test signals a real harness process mid-call: 20-60 s

HARNESS = str(Path(sys.executable).parent / "harness")
SLOW = "sleep 20; echo late >> log.txt"
SCRIPT = {
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "arguments": {"command": "mkdir -p sub && cd sub && export KEPT=1; echo 0 >> ../log.txt"},
                }
            ]
        },
        {"tool_calls": [{"name": "shell", "arguments": {"command": SLOW}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo $KEPT ${PWD##*/}; cat ../log.txt"}}]},
        {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]},
    ]
}
# The same run without its slow call, for a run whose signal lands elsewhere: its whole life takes seconds.
QUICK = {"replies": [SCRIPT["replies"][0], {"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]}]}
QUICK["replies"].append(SCRIPT["replies"][-1])


def harness(*args: str) -> subprocess.Popen:
    return subprocess.Popen([HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def started_run(tmp_path: Path, sandbox: str, policy: str | None = None) -> tuple[subprocess.Popen, Path]:
    """`harness run` in the middle of its slow call: its run directory, once that call's intent is journaled."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = ["run", "--task", "Count.", "--model", f"scripted:{script}", "--sandbox", sandbox, "--out", str(tmp_path)]
    proc = harness(*args, *(["--policy", policy] if policy else []))
    return proc, in_slow_call(proc, tmp_path)


def in_slow_call(proc: subprocess.Popen, folder: Path) -> Path:
    """The run directory in `folder` of the run `proc` drives, once its slow call's intent is journaled."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = [d for d in folder.iterdir() if (d / "events.jsonl").exists()] if folder.exists() else []
        if runs and any(isinstance(e, ToolIntent) and "echo late" in str(e.arguments) for e in read_events(runs[0])):
            time.sleep(0.5)  # inside the command
            return runs[0]
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the run never reached its slow call")


def stopped(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, str, float]:
    start = time.monotonic()
    proc.send_signal(sig)
    output = proc.communicate(timeout=120)[0]
    return proc.returncode, output, time.monotonic() - start


def containers(run_dir: Path) -> list[str]:
    import docker

    from sandboxes.docker_options import RUN_LABEL

    found = docker.from_env().containers.list(
        all=True, filters={"label": f"{RUN_LABEL}={run_dir.resolve()}"}, ignore_removed=True
    )
    return [c.name for c in found]


def resumed_and_replayed(run_dir: Path, tmp_path: Path) -> list[dict]:
    """Resume the run to its end, then replay it: the observations of the resumed run."""
    done = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cannot export" not in done.stdout + done.stderr
    report = replay(run_dir, out=tmp_path / "replay")
    assert report.harness == [] and report.replayed_stop == "submitted", [d.what for d in report.harness]
    assert sum(isinstance(e, RunResumed) for e in read_events(report.replay_dir)) == 1  # the recovery was replayed
    return [e.observation.model_dump() for e in read_events(run_dir) if isinstance(e, ToolObserved)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_local_run_gracefully_and_the_resumed_run_replays(tmp_path, sig):
    proc, run_dir = started_run(tmp_path, "local")
    code, output, took = stopped(proc, sig)
    assert code == 128 + sig and took < 10, output
    assert f"stopped by {sig.name}" in output and "Traceback" not in output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted" and summary["outcome"] == {"signal": sig.name}
    assert json.loads((run_dir / "snapshot.json").read_text())["stop"] == "interrupted"
    time.sleep(0.5)
    assert not (run_dir / "workspace" / "log.txt").read_text().count("late")  # the command's group was killed
    observed = resumed_and_replayed(run_dir, tmp_path)
    assert observed[1]["error_kind"] == "interrupted" and not observed[1]["executed"]  # settled, as after a crash


@pytest.mark.usefixtures("docker_ready")
def test_sigterm_stops_a_docker_run_removes_its_container_and_keeps_its_shell_for_the_resume(tmp_path):
    proc, run_dir = started_run(tmp_path, "docker")
    code, output, took = stopped(proc, signal.SIGTERM)
    assert code == 143 and took < 30, output
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    snapshot = json.loads((run_dir / "snapshot.json").read_text())
    assert snapshot["sandbox"]["cwd"] == "/workspace/sub" and snapshot["sandbox"]["env"] == {"KEPT": "1"}
    assert containers(run_dir) == []  # removed; its workspace is a checkpoint image the resume starts from
    observed = resumed_and_replayed(run_dir, tmp_path)
    assert observed[2]["text"] == "1 sub\n0\n"  # the shell's state came back from the snapshot
    assert containers(run_dir) == []
    from sandboxes.docker_runs import checkpoints

    assert checkpoints(run_dir) == []  # the image the resume started from is removed once the run ended


@pytest.mark.usefixtures("docker_ready")
def test_ctrl_c_in_a_docker_tool_call_leaves_a_run_that_resumes(tmp_path):
    proc, run_dir = started_run(tmp_path, "docker")
    code, output, _ = stopped(proc, signal.SIGINT)
    assert code == 130, output
    observed = resumed_and_replayed(run_dir, tmp_path)
    assert observed[-1]["text"] == "Submitted. The run ends here."
    assert containers(run_dir) == []


def test_with_on_signal_finish_the_call_in_flight_runs_to_its_end(tmp_path):
    policy = tmp_path / "finish.toml"
    policy.write_text('[checkpoint]\non_signal = "finish"\n\n[dispatch]\ntool_timeout_s = 30\n')
    SCRIPT["replies"][1]["tool_calls"][0]["arguments"]["command"] = "sleep 3; echo late >> log.txt"
    try:
        proc, run_dir = started_run(tmp_path, "local", str(policy))
    finally:
        SCRIPT["replies"][1]["tool_calls"][0]["arguments"]["command"] = SLOW
    code, output, took = stopped(proc, signal.SIGTERM)
    assert code == 143 and took > 1, output
    events = read_events(run_dir)
    finished = [e for e in events if isinstance(e, ToolObserved)][-1]
    assert finished.observation.executed and finished.observation.status == "ok"  # the call ended and is journaled
    assert events[-1].type == "run_stopped" and events[-1].step == 2
    assert (run_dir / "workspace" / "log.txt").read_text() == "0\nlate\n"
    resumed_and_replayed(run_dir, tmp_path)


def test_a_second_signal_abandons_what_the_first_let_finish(tmp_path):
    policy = tmp_path / "finish.toml"
    policy.write_text('[checkpoint]\non_signal = "finish"\n')
    proc, run_dir = started_run(tmp_path, "local", str(policy))
    proc.send_signal(signal.SIGTERM)
    time.sleep(1)
    assert proc.poll() is None  # finishing the 20 s call
    code, output, took = stopped(proc, signal.SIGTERM)
    assert code == 143 and took < 10, output
    assert not any(isinstance(e, ToolObserved) and e.step == 2 for e in read_events(run_dir))


def test_a_signal_before_the_first_step_stops_the_run_with_its_summary(tmp_path):
    """Stopped while its sandbox is prepared (a task setup command runs): `interrupted`, and it begins again."""
    task = tmp_path / "task.yaml"
    task.write_text("prompt: Count.\nsetup: ['sleep 8']\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(QUICK))  # the resume begins again from the setup, and runs every call
    proc = harness("run", "--task", str(task), "--model", f"scripted:{script}", "--out", str(tmp_path / "runs"))
    while not list((tmp_path / "runs").glob("*/events.jsonl")):
        time.sleep(0.2)
    time.sleep(1)
    code, output, _ = stopped(proc, signal.SIGTERM)
    assert code == 143 and "Traceback" not in output, output
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    done = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "submitted" in done.stdout, done.stdout + done.stderr
    report = replay(run_dir, out=tmp_path / "replay")  # its first life made nothing: the replay opens and goes on
    assert (report.harness, report.notes, report.replayed_stop) == ([], [], "submitted"), report.notes


def test_sigterm_stops_a_fork_with_its_summary_and_the_fork_resumes(tmp_path):
    """`harness fork` goes on live after its branch: a signal there stops it as it stops `harness run`."""
    script, parent_script = tmp_path / "script.json", tmp_path / "parent.json"
    script.write_text(json.dumps(SCRIPT))
    parent_script.write_text(json.dumps(QUICK))
    made = subprocess.run(
        [HARNESS, "run", "--task", "Count.", "--model", f"scripted:{parent_script}", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    [parent] = list((tmp_path / "runs").iterdir())
    proc = harness("fork", str(parent), "--at-step", "1", "--model", f"scripted:{script}", "--out", str(tmp_path / "f"))
    run_dir = in_slow_call(proc, tmp_path / "f")
    code, output, took = stopped(proc, signal.SIGTERM)
    assert code == 143 and took < 10 and "Traceback" not in output, output
    assert "stopped by SIGTERM" in output
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    observed = resumed_and_replayed(run_dir, tmp_path)  # the fork's replay stops and resumes where it did
    assert observed[1]["error_kind"] == "interrupted" and not observed[1]["executed"]
    assert (run_dir / "workspace" / "log.txt").read_text() == "0\n"  # the branch's world; the cut call undone
