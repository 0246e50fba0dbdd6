"""The one run builder: every command's runs get the policy's MCP servers and record the tools they offered."""

from __future__ import annotations

import json
import sys

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.policy import HarnessPolicy, ModelParams, step_params
from tests.agent.helpers import call
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)
from tests.tools.mcp.conftest import SERVERS

POLICY = f"""
extends = "default"

[[mcp]]
name = "notes"
command = "{sys.executable}"
args = ["{SERVERS / "basic.py"}"]
"""


def offered(run_dir) -> dict[str, str]:
    return {t["name"]: t["server"] for t in json.loads((run_dir / "run.json").read_text())["tools"]}


def test_a_chess_game_offers_the_policys_mcp_tools(tmp_path):
    (tmp_path / "policy.toml").write_text(POLICY)
    result = CliRunner().invoke(
        app,
        [
            "chess",
            "--games",
            "1",
            "--model",
            "player:random",
            "--opponent",
            "stockfish:skill=0,depth=1",
            "--max-plies",
            "4",
            "--analysis-depth",
            "0",
            "--policy",
            str(tmp_path / "policy.toml"),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    [game] = [p.parent for p in (tmp_path / "out").rglob("run.json")]
    tools = offered(game)
    assert tools["make_move"] == "builtin" and tools["notes__write_note"] == "notes"
    records = json.loads((game / "artifacts" / "tools.json").read_text())
    assert {r["name"] for r in records} == set(tools) and all(r["input_schema"] for r in records)


def test_a_swe_instance_offers_the_policys_mcp_tools(docker_ready, tmp_path):  # noqa: F811  (the fixture)
    (tmp_path / "policy.toml").write_text(POLICY)
    result = CliRunner().invoke(
        app,
        [
            "swe",
            "--suite",
            "builtin",
            "--model",
            "null",
            "--only",
            "acme__configlite-41",
            "--policy",
            str(tmp_path / "policy.toml"),
            "--out",
            str(tmp_path / "batch"),
        ],
    )
    assert result.exit_code == 0, result.output
    [batch] = (tmp_path / "batch").iterdir()
    run_dir = batch / "acme__configlite-41"
    tools = offered(run_dir)
    assert tools["shell"] == "builtin" and tools["notes__write_note"] == "notes"
    info = json.loads((run_dir / "run.json").read_text())
    assert info["sandbox"] == "docker" and info["workdir"] == "/testbed" and info["image"]
    assert info["toolset"] == "repository"


def summary_of(out) -> dict:
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return json.loads((run_dir / "summary.json").read_text())


def test_a_docker_run_whose_image_is_missing_gets_its_summary(docker_ready, tmp_path):  # noqa: F811  (the fixture)
    script = tmp_path / "script.yaml"
    script.write_text("replies:\n  - text: hi\n")
    image = "harness-no-such-image:1"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--task",
            "x",
            "--model",
            f"scripted:{script}",
            "--sandbox",
            f"docker:{image}",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"image '{image}' is not on this Docker engine and nothing is pulled" in " ".join(result.output.split())
    summary = summary_of(tmp_path / "runs")
    assert summary["stop_reason"] == "environment_error" and summary["steps"] == 0
    assert summary["message"].startswith("The sandbox could not be started: ") and image in summary["message"]


def test_a_task_whose_setup_fails_gets_its_summary(tmp_path):
    task = tmp_path / "task.yaml"
    task.write_text('prompt: hi\nsetup: ["echo preparing; exit 3"]\n')
    script = tmp_path / "script.yaml"
    script.write_text("replies:\n  - text: hi\n")
    result = CliRunner().invoke(
        app, ["run", "--task", str(task), "--model", f"scripted:{script}", "--out", str(tmp_path / "runs")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    summary = summary_of(tmp_path / "runs")
    assert summary["stop_reason"] == "environment_error"
    assert summary["message"].startswith("Task task: setup command `echo preparing; exit 3` failed (exit 3)")


class Seeded(ScriptedModel):
    def __init__(self, replies, seen: list):
        super().__init__(replies)
        self.seen = seen

    def complete(self, messages, tools, params):
        self.seen.append(params.seed)
        return super().complete(messages, tools, params)


def test_a_runs_seed_mixed_with_the_step_is_the_seed_each_call_samples_with(tmp_path):
    replies = [call("shell", command="echo a"), call("shell", command="echo b"), call("submit", answer="done")]
    seen: list = []
    _, run_dir = start(
        RunSpec(Task(id="t", prompt="Submit."), Seeded(replies, seen), HarnessPolicy(), tmp_path, seed=7)
    )
    info = json.loads((run_dir / "run.json").read_text())
    assert info["seed"] == 7 and info["policy"]["model"]["seed"] == 7
    assert seen == [step_params(ModelParams(seed=7), step).seed for step in (1, 2, 3)]
    assert len(set(seen)) == 3  # one seed for every call would give every step the same random draws
    again: list = []
    start(RunSpec(Task(id="t", prompt="Submit."), Seeded(replies, again), HarnessPolicy(), tmp_path / "again", seed=7))
    assert again == seen


@given(st.integers(min_value=-(2**63), max_value=2**64 - 1), st.integers(min_value=1, max_value=10**6))
def test_a_step_seed_depends_on_the_seed_and_the_step_and_fits_every_sampler(seed, step):
    mixed = step_params(ModelParams(seed=seed), step).seed
    assert mixed == step_params(ModelParams(seed=seed), step).seed and 0 <= mixed < 2**63
    assert mixed != step_params(ModelParams(seed=seed), step + 1).seed
    assert step_params(ModelParams(seed=None), step).seed is None
