"""`harness run --sandbox docker`: the whole loop with its tools inside a container."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app


def test_harness_run_in_the_docker_sandbox(docker_ready, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: write_file, arguments: {path: hello.py, content: \"print('hi from', __import__('os').getuid())\"}}]\n"
        "- tool_calls: [{name: shell, arguments: {command: 'python3 hello.py; pwd'}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--task",
            "say hi",
            "--model",
            f"scripted:{script}",
            "--sandbox",
            "docker",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert result.exit_code == 0, result.output
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "run.json").read_text())["sandbox"] == "docker"
    observed = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    shell = [e["observation"] for e in observed if e["type"] == "tool_observed" and e["observation"]["tool"] == "shell"]
    assert shell[0]["text"].splitlines() == ["hi from 1000", "/workspace"]  # not root, in the container's workspace


def test_a_shell_that_closes_its_own_output_does_not_break_the_stop(docker_ready, tmp_path):
    """`exec 1>&-; exec 2>&-` in a Docker run: the next command's output comes back, the stop reads the shell's
    state for its snapshot, summary.json is written, the command exits 0 and no checkpoint image is left."""
    import docker

    from sandboxes.docker_runs import checkpoints

    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: shell, arguments: {command: 'cd /tmp && export KEPT=1; exec 1>&-; exec 2>&-'}}]\n"
        "- tool_calls: [{name: shell, arguments: {command: 'echo $KEPT; pwd; ls /nope'}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    runs = tmp_path / "runs"
    args = ["run", "--task", "x", "--model", f"scripted:{script}", "--sandbox", "docker", "--out", str(runs)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    [run_dir] = list(runs.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "submitted"
    observed = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    shell = [e["observation"] for e in observed if e["type"] == "tool_observed" and e["observation"]["tool"] == "shell"]
    assert shell[1]["text"].startswith("1\n/tmp\nls: cannot access '/nope'")
    assert json.loads((run_dir / "snapshot.json").read_text())["sandbox"]["env"] == {"KEPT": "1"}
    assert checkpoints(run_dir, docker.from_env()) == []
