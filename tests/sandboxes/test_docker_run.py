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


def test_an_image_that_is_not_there_is_a_clear_error(docker_ready, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("- tool_calls: [{name: submit, arguments: {answer: done}}]\n")
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--task",
            "x",
            "--model",
            f"scripted:{script}",
            "--sandbox",
            "docker:no-such-image:1",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no-such-image:1" in result.output and "nothing is pulled" in " ".join(result.output.split())
