"""The embedded model works with default settings: no policy named, the `local` preset applies."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.main import EXAMPLES, app


def run_json(folder) -> dict:
    [path] = list(folder.rglob("run.json"))
    return json.loads(path.read_text())


@pytest.mark.model
def test_harness_run_with_the_local_model_and_no_policy_finishes(tmp_path):
    result = CliRunner().invoke(
        app, ["run", "--model", "local", "--task", str(EXAMPLES / "demo_task.yaml"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    policy = run_json(tmp_path)["policy"]
    assert policy["name"] == "local" and policy["model"]["tool_choice"] == "required"
    [summary] = [json.loads(p.read_text()) for p in tmp_path.rglob("summary.json")]
    assert summary["stop_reason"] != "harness_error" and summary["steps"] <= policy["stop"]["max_steps"]
    assert summary["tokens"]["completion"] <= summary["steps"] * policy["model"]["max_tokens"]


@pytest.mark.model
def test_harness_chess_with_the_local_model_and_no_policy_finishes(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "chess",
            "--model",
            "local",
            "--games",
            "1",
            "--max-plies",
            "6",
            "--analysis-depth",
            "0",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    info = run_json(tmp_path)
    assert info["policy"]["model"]["tool_choice"] == "required"
    assert "resign" not in {t["name"] for t in info["tools"]}  # a small model would resign at once
    [summary] = [json.loads(p.read_text()) for p in tmp_path.rglob("summary.json") if p.parent.name != tmp_path.name]
    assert summary["stop_reason"] == "game_over", summary["message"]


def test_a_named_policy_wins_over_the_local_default(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "scripted:" + str(EXAMPLES / "demo_script.yaml"),
            "--task",
            str(EXAMPLES / "demo_task.yaml"),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert run_json(tmp_path)["policy"]["name"] == "default"
