"""Paths given relative to the folder `harness` runs in mean the same on Ray as with the local executor.

Each batch runs twice from the same folder, every path in it relative — the scripted model, the policy file and the
MCP server it starts (`python basic.py`, its working folder), the price table, the tasks folder, the batch's parent
and `--resume` — once with `--executor local`, once on the suite's two-node cluster (`--ray-address`, whose workers
start in another folder): the outcomes, costs and the tools each run was offered are the same."""

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
from tests.tools.mcp.conftest import SERVERS

# The game's first reply calls the policy's MCP tool, the second resigns; each reply is priced.
SCRIPT = [
    {"tool_calls": [{"name": "notes__echo", "arguments": {"text": "e4"}}], "usage": {"prompt_tokens": 1000}},
    {"tool_calls": [{"name": "resign", "arguments": {}}], "usage": {"prompt_tokens": 1000}},
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


def test_a_chess_batch_with_relative_paths_on_ray_equals_the_local_one(ray_cluster, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "play.yaml").write_text(yaml.safe_dump(SCRIPT))
    (tmp_path / "servers").mkdir()
    shutil.copy(SERVERS / "basic.py", tmp_path / "servers" / "basic.py")
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "prices.toml").write_text('[scripted."models/play.yaml"]\ninput = 500.0\noutput = 0.0\n')
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
