"""The newer levers on the Ray executor. A tasks batch of two runs whose policy has the code search tools and the
opening repository map, code mode (a program calling them) and the agent's memory kept in a --memory store, run on
the real two-node cluster, equals the same batch run locally: the same verdicts, observations, maps and store.
A chess batch in code mode (no Docker) spreads over both nodes, each game's programs in its worker's sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from agent.journal.store import read_events, read_run_info
from agent.memory_dir import MemoryDir, load, parse
from agent.recorded.replay import replay
from agent.session import SandboxSpec
from core.events import ToolObserved
from core.policy import DispatchPolicy, HarnessPolicy
from core.presets import PRESETS, memory_on
from evals.chess.batch import ChessBatchSpec, play_batch
from evals.chess.game import GameRules
from evals.chess.players import ModelMaker
from evals.executors import ExecutorOptions
from evals.swe.runner import SweBatchSpec
from evals.tasks.batch import run_tasks
from evals.tasks.task import find_tasks
from tests.agent.helpers import call
from tests.evals.executors.conftest import ray_cluster  # noqa: F401  (the cluster, started once)
from tests.evals.tasks.conftest import REWRITES, TASKS

SCRIPT = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "shop.py", "content": "def discount_rate(total):\n    return 0.1\n"}}]},
    {"tool_calls": [{"name": "search_code", "arguments": {"query": "discount rate"}}]},
    {"tool_calls": [{"name": "run_code", "arguments": {"code": "print(find_symbol(name='discount_rate'))\nprint(write_file(path='one.txt', content='hello'))"}}]},
    {"tool_calls": [{"name": "memory", "arguments": {"command": "create", "path": "/memories/seen.md", "file_text": "a discount\n"}}]},
    {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]},
]  # fmt: skip


def observed(run_dir: Path) -> list[tuple[str, str]]:
    return [(e.observation.tool, e.observation.text) for e in read_events(run_dir) if isinstance(e, ToolObserved)]


def test_code_tools_code_mode_and_memory_on_ray_equal_the_local_batch(docker_ready, ray_cluster, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # --memory m-ray as given on the command line: a path relative to the driver's folder
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    policy = memory_on(PRESETS["code_search"]).model_copy(update={"dispatch": DispatchPolicy(mode="both")})
    tasks = find_tasks([TASKS / "half-reward", TASKS / "multi-file"])
    model = f"scripted:{script}"
    ray = ExecutorOptions(kind="ray", address=ray_cluster.address)
    reports = {}
    for where, executor in (("local", ExecutorOptions()), ("ray", ray)):
        spec = SweBatchSpec(tasks, model, policy, tmp_path / where, executor, memory=parse(f"m-{where}"))
        reports[where] = run_tasks(spec, REWRITES)
    assert reports["local"] == reports["ray"]
    kept = {w: [e.model_dump(exclude={"at"}) for e in load(MemoryDir(tmp_path / f"m-{w}"))] for w in reports}
    # the second run, on a Ray worker too, reads the note the first left in the store: its create is refused
    assert kept["ray"] == kept["local"] and [e["instance"] for e in kept["ray"]] == [tasks[0].instance_id]
    for task in tasks:
        local, on_ray = (next((tmp_path / w / task.instance_id).rglob("events.jsonl")).parent for w in ("local", "ray"))
        assert [t for t, _ in observed(on_ray)] == ["write_file", "search_code", "run_code", "memory", "submit"]
        assert observed(on_ray) == observed(local)
        assert "1. shop.py" in observed(on_ray)[1][1] and "def discount_rate" in observed(on_ray)[2][1]
        mapped = read_run_info(on_ray).task["repo_map"]
        assert mapped is not None and mapped == read_run_info(local).task["repo_map"]
        assert (on_ray / "memories" / "seen.md").read_text() == "a discount\n"
        if task is tasks[1]:
            assert "already exists" in observed(on_ray)[3][1], observed(on_ray)[3][1]
        played = replay(on_ray, out=tmp_path / "replays")
        assert played.harness == [] and played.replayed_stop == "submitted"


def test_a_code_mode_chess_batch_on_ray_spreads_over_both_nodes_and_equals_the_local_one(ray_cluster, tmp_path):  # noqa: F811
    # One program a turn, in the worker's own local sandbox: it reads the legal moves and plays the first.
    program = "moves = get_legal_moves().split(': ', 1)[1].split(',')\nmake_move(move=moves[0].strip())\nprint('x')"
    script = tmp_path / "program.json"
    script.write_text(json.dumps({"replies": [call("run_code", code=program).model_dump(mode="json")] * 2}))
    policy = HarnessPolicy(name="code", dispatch=DispatchPolicy(mode="code"))
    settings = dict(
        games=2,
        make_model=ModelMaker(f"scripted:{script}"),
        opponent="random",
        color="white",
        seed=5,
        rules=GameRules(max_plies=4),
        analysis_depth=None,
        policy=policy,
        sandbox=SandboxSpec(kind="local"),
    )
    local, local_dir = play_batch(ChessBatchSpec(**settings, out=tmp_path / "local"))
    ray = ExecutorOptions(kind="ray", address=ray_cluster.address)
    on_ray, ray_dir = play_batch(ChessBatchSpec(**settings, out=tmp_path / "ray", executor=ray))
    assert [g.game for g in on_ray.games] == [1, 2]
    for a, b in zip(local.games, on_ray.games):
        programs = [t for t, _ in observed(ray_dir / b.run_dir)]
        assert programs == ["run_code", "run_code"] and observed(ray_dir / b.run_dir) == observed(local_dir / a.run_dir)
        assert all("stopped at its call to make_move" in text for _, text in observed(ray_dir / b.run_dir))
    record = json.loads((ray_dir / "executor.json").read_text())
    assert len({item["node"] for item in record["items"].values()}) == 2
