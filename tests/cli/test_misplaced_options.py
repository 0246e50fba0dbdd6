"""Options given where they do nothing, and inputs of the wrong kind, are refused with what to do instead,
before anything starts or is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "demo_script.yaml"


@pytest.mark.parametrize(
    "args",
    [
        ["chess", "--model", "player:random", "--opponent", "random", "--ray-address", "auto"],
        ["swe", "--model", "null", "--task-memory-mb", "512"],
    ],
)
def test_ray_options_without_the_ray_executor_are_refused(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "are for --executor ray" in result.stderr and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_tasks_run_names_a_file_as_a_file(tmp_path):
    task = tmp_path / "task.toml"
    task.write_text("")
    result = runner.invoke(app, ["tasks", "run", str(task), "--model", "null", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "is a file, not a folder" in result.stderr and not (tmp_path / "out").exists()


def test_a_run_without_a_finished_step_is_forked_only_at_step_0(tmp_path):
    made = runner.invoke(app, ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--out", str(tmp_path / "r")])
    assert made.exit_code == 0, made.output
    [run] = (tmp_path / "r").iterdir()
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    first_call = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "tool_intent")
    (run / "events.jsonl").write_text("".join(lines[: first_call + 1]))  # died inside step 1's call
    result = runner.invoke(app, ["fork", str(run), "--at-step", "1", "--out", str(tmp_path / "f")])
    assert result.exit_code == 2, result.output
    assert "it has no finished step" in result.stderr and "Give --at-step 0" in result.stderr
    assert not (tmp_path / "f").exists()
