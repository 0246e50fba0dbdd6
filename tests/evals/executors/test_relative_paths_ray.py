"""Paths given relative to the folder `harness` runs in mean the same on Ray as with the local executor.

Each batch runs twice from the same folder, every path in it relative — the scripted model, the policy file and the
MCP server it starts (`python basic.py`, its working folder), the price table, the tasks folder, the batch's parent
and `--resume` — once with `--executor local`, once on the suite's two-node cluster (`--ray-address`, whose workers
start in another folder): the outcomes, the costs and what each run's tools returned are the same."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from agent.journal.store import read_events
from cli.main import app
from core.events import ToolObserved
from tests.evals.executors.conftest import ray_cluster  # noqa: F401  (the cluster, started once)
from tests.evals.tasks.conftest import TASKS
from tests.tools.mcp.conftest import SERVERS

# The game's first reply calls the policy's MCP tool, the second resigns; each reply is priced.
SCRIPT = [
    {"tool_calls": [{"name": "notes__echo", "arguments": {"text": "e4"}}], "usage": {"prompt_tokens": 1000}},
    {"tool_calls": [{"name": "resign", "arguments": {}}], "usage": {"prompt_tokens": 1000}},
]
# A task run: the MCP tool, then the first half of the task's work (hello in one.txt), then submit.
TASK_SCRIPT = [
    {"tool_calls": [{"name": "notes__echo", "arguments": {"text": "hello"}}], "usage": {"prompt_tokens": 1000}},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "one.txt", "content": "hello"}}]},
    {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]},
]
POLICY = f"""
extends = "default"

[[mcp]]
name = "notes"
command = "{sys.executable}"
args = ["basic.py"]
cwd = "servers"
trusted = true
"""


def harness(*args: str):
    return CliRunner().invoke(app, list(args))


def observed(run_dir: Path) -> list[tuple[str, str]]:
    return [(e.observation.tool, e.observation.text) for e in read_events(run_dir) if isinstance(e, ToolObserved)]


def executors(address: str) -> dict[str, list[str]]:
    return {"local": ["--executor", "local"], "ray": ["--executor", "ray", "--ray-address", address]}


def user_folder(tmp_path: Path, monkeypatch) -> None:
    """The folder the user runs `harness` in: the models, the policy, the MCP server and the prices, all named
    relative to it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "play.yaml").write_text(yaml.safe_dump(SCRIPT))
    (tmp_path / "models" / "task.yaml").write_text(yaml.safe_dump(TASK_SCRIPT))
    (tmp_path / "servers").mkdir()
    shutil.copy(SERVERS / "basic.py", tmp_path / "servers" / "basic.py")
    (tmp_path / "policy.toml").write_text(POLICY)
    prices = "input = 500.0\noutput = 0.0\n"
    (tmp_path / "prices.toml").write_text(
        f'[scripted."models/play.yaml"]\n{prices}[scripted."models/task.yaml"]\n{prices}'
    )


def test_a_chess_batch_on_ray_equals_the_local_one(ray_cluster, tmp_path, monkeypatch):  # noqa: F811
    user_folder(tmp_path, monkeypatch)
    common = ["chess", "--model", "scripted:models/play.yaml", "--policy", "policy.toml", "--prices", "prices.toml"]
    common += ["--opponent", "random", "--color", "white", "--analysis-depth", "0"]
    batches = {}
    for where, options in executors(ray_cluster.address).items():
        # the first game within a $1 budget, then --resume (a relative batch folder) plays the second
        result = harness(*common, *options, "--games", "2", "--max-cost-usd", "0.5", "--out", f"out-{where}")
        assert result.exit_code == 0, result.output
        (folder,) = Path(f"out-{where}").iterdir()
        result = harness(*common, *options, "--games", "2", "--resume", str(folder), "--json")
        assert result.exit_code == 0, result.output
        batches[where] = tmp_path / folder
    played = {w: json.loads((f / "batch.json").read_text()) for w, f in batches.items()}
    assert played["ray"]["cost"] == played["local"]["cost"] == {
        "cost_usd": 2.0, "unpriced_calls": 0, "max_cost_usd": None, "skipped_for_budget": 0
    }  # fmt: skip
    games = {w: [g["run_dir"] for g in p["games"]] for w, p in played.items()}
    assert len(games["ray"]) == len(games["local"]) == 2
    for local, on_ray in zip(games["local"], games["ray"]):
        seen = observed(batches["ray"] / on_ray)
        assert seen == observed(batches["local"] / local)
        assert seen[0] == ("notes__echo", "e4") and seen[1][0] == "resign", seen
    assert json.loads((batches["ray"] / "executor.json").read_text())["executor"] == "ray"


def test_a_tasks_batch_on_ray_equals_the_local_one(docker_ready, ray_cluster, tmp_path, monkeypatch):  # noqa: F811
    user_folder(tmp_path, monkeypatch)
    shutil.copytree(TASKS / "half-reward", tmp_path / "tasks" / "half-reward")
    common = ["tasks", "run", "tasks", "--model", "scripted:models/task.yaml", "--policy", "policy.toml"]
    common += ["--prices", "prices.toml", "--base-image", "python:3.13-slim-bookworm=harness-base:bookworm-1"]
    reports = {}
    for where, options in executors(ray_cluster.address).items():
        result = harness(*common, *options, "--out", f"out-{where}", "--json")
        assert result.exit_code == 0, result.output
        shown = json.loads(result.stdout)
        reports[where] = shown
        folder = Path(shown["batch_folder"])
        run_dir = next((folder / "half-reward").rglob("events.jsonl")).parent
        reports[where]["observed"] = observed(run_dir)
        del shown["batch_folder"]
    assert reports["ray"] == reports["local"]
    cost = reports["ray"]["cost"]
    assert reports["ray"]["rewards"] == {"half-reward": 0.5} and cost["cost_usd"] > 0 and cost["unpriced_calls"] == 0
    assert reports["ray"]["observed"][0] == ("notes__echo", "hello")
