"""A run whose agent kills every process it may signal, under the Docker sandbox, goes on to a normal finish."""

import json

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import DispatchPolicy, HarnessPolicy
from sandboxes.docker import factory
from tests.agent.helpers import call, events


def test_kill_minus_one_mid_run_is_survived_and_the_run_finishes(docker_ready, tmp_path):
    replies = [
        call("shell", command="cd /tmp && export KEPT=1 && echo first > /workspace/first.txt && sleep 300 &"),
        call("shell", command="cd /tmp && export KEPT=1 && kill -9 -1"),  # the shell's own builtin spares the shell
        call("read_file", path="/workspace/first.txt"),  # the file tools' shell was killed: a new one serves
        call("shell", command="bash -c 'kill -9 -1'"),  # from a child: the shell dies too and is replaced
        call("write_file", path="/workspace/second.txt", content="second\n"),
        call("read_file", path="/dev/zero"),  # bounded by the policy's timeout, not a fixed minute
        call("shell", command='cat /workspace/first.txt /workspace/second.txt; echo "$PWD ${KEPT:-unset}"'),
        call("submit", answer="done"),
    ]
    policy = HarnessPolicy(dispatch=DispatchPolicy(tool_timeout_s=3))
    summary, run_dir = start(
        RunSpec(Task(prompt="clean up every process"), ScriptedModel(replies), policy, tmp_path, sandbox=factory())
    )

    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "submitted"
    assert summary.steps == len(replies)
    observed = [e["observation"] for e in events(run_dir) if e["type"] == "tool_observed"]
    assert [(o["tool"], o["status"], o["error_kind"]) for o in observed] == [
        ("shell", "ok", None),
        ("shell", "ok", None),
        ("read_file", "ok", None),
        ("shell", "error", "nonzero_exit"),
        ("write_file", "ok", None),
        ("read_file", "timeout", "timeout"),
        ("shell", "ok", None),
        ("submit", "ok", None),
    ]
    assert observed[2]["text"] == "     1\tfirst"
    assert observed[3]["text"].endswith(  # after bash's notice of the killed job, when it was reaped in time
        "\n[sandbox: the shell was killed (signal 9); the next command runs in a new shell, starting in /tmp: "
        "the old shell's exported variables, shell functions and background jobs are gone]\n[exit code 137]"
    )
    assert observed[5]["text"].startswith("timed out after 3 s reading /dev/zero: it is a character device")
    assert observed[5]["duration_s"] < 6
    # Nothing was lost but what the note named: both files, the cwd; the exported variable is gone.
    assert observed[6]["text"].splitlines()[-3:] == ["first", "second", "/tmp unset"]
    assert not any(e["type"] == "tool_observed" and "Traceback" in e["observation"]["text"] for e in events(run_dir))
