"""Batches on a real two-node Ray cluster leave the same files and results as the local executor.

SWE uses three instances of the bundled suite (one per package) to keep the test
within its time on a two-core machine; the benchmark runs all ten.
"""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from cli.main import app
from core.policy import HarnessPolicy
from evals.chess.batch import ChessBatchSpec, play_batch
from evals.chess.game import GameRules
from evals.chess.players import ModelMaker
from evals.executors import ExecutorOptions
from evals.swe.batch import run_and_grade
from evals.swe.runner import SweBatchSpec
from evals.swe.suite import load_instances, suite_path
from tests.evals.executors.compare import files, same_run
from tests.evals.executors.conftest import node_ids_with


def test_a_swe_batch_on_ray_equals_the_local_one(docker_ready, ray_cluster, tmp_path):
    instances = load_instances(suite_path("builtin"))
    ids = sorted(i.instance_id for i in instances)
    local = run_and_grade(SweBatchSpec(instances, "oracle", HarnessPolicy(), tmp_path / "local"))
    on_ray = run_and_grade(
        SweBatchSpec(
            instances,
            "oracle",
            HarnessPolicy(),
            tmp_path / "ray",
            ExecutorOptions(kind="ray", address=ray_cluster.address),
        )
    )
    assert local.resolved_ids == on_ray.resolved_ids == ids
    assert files(tmp_path / "local") == files(tmp_path / "ray")
    for name in ("report.json", "predictions.jsonl"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    for iid in ids:
        same_run(tmp_path / "local" / iid, tmp_path / "ray" / iid)
        for name in ("grade.json", "artifacts/model.patch"):
            assert (tmp_path / "local" / iid / name).read_bytes() == (tmp_path / "ray" / iid / name).read_bytes()
    # Every SWE task ran on the node that offers `docker`, once.
    record = json.loads((tmp_path / "ray" / "executor.json").read_text())
    assert record["executor"] == "ray" and record["nodes"] == 2 and record["retries"] == 0
    docker_nodes = node_ids_with(ray_cluster, "docker")
    assert {item["node"].split("/")[1] for item in record["items"].values()} <= docker_nodes
    assert [item["attempts"] for item in record["items"].values()] == [1] * len(ids)


def test_a_chess_batch_on_ray_equals_the_local_one(ray_cluster, tmp_path):
    settings = dict(
        games=3,
        make_model=ModelMaker("player:random"),
        opponent="stockfish:depth=1",
        color="alternate",
        seed=5,
        rules=GameRules(max_plies=24),
        analysis_depth=4,
    )
    local, local_dir = play_batch(
        ChessBatchSpec(**settings, out=tmp_path / "local", executor=ExecutorOptions(workers=2))
    )
    on_ray, ray_dir = play_batch(
        ChessBatchSpec(
            **settings, out=tmp_path / "ray", executor=ExecutorOptions(kind="ray", address=ray_cluster.address)
        )
    )
    assert [g.game for g in on_ray.games] == [1, 2, 3]
    assert [g.record.model_dump(exclude={"game_time_s", "reply_time_s"}) for g in local.games] == [
        g.record.model_dump(exclude={"game_time_s", "reply_time_s"}) for g in on_ray.games
    ]
    assert local.aggregate.model_dump(exclude={"avg_game_time_s"}) == on_ray.aggregate.model_dump(
        exclude={"avg_game_time_s"}
    )
    for a, b in zip(local.games, on_ray.games):
        same_run(local_dir / a.run_dir, ray_dir / b.run_dir)
    assert sorted(p.name for p in ray_dir.iterdir() if p.is_file()) == ["batch.json", "executor.json"]
    # Games need no Docker, so they spread over both nodes (one CPU each).
    record = json.loads((ray_dir / "executor.json").read_text())
    assert len({item["node"] for item in record["items"].values()}) == 2


def test_asking_for_ray_without_it_installed_is_a_clear_error(tmp_path):
    # A child interpreter where `import ray` fails, as on a machine without it.
    code = (
        "import sys; sys.modules['ray'] = None; from cli.main import app; "
        f"app(['chess', '--model', 'player:random', '--opponent', 'random', '--executor', 'ray', '--out', {str(tmp_path)!r}])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install 'harness[ray]'" in " ".join(proc.stderr.split()) and not any(tmp_path.iterdir())


def test_harness_swe_on_ray_shows_the_batch_and_the_nodes(docker_ready, ray_cluster, tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "swe",
            "--model",
            "oracle",
            "--only",
            "acme__textkit-14",
            "--out",
            str(tmp_path),
            "--executor",
            "ray",
            "--ray-address",
            ray_cluster.address,
            "--retries",
            "2",
            "--task-cpus",
            "0.5",
            "--task-memory-mb",
            "256",
        ],
    )
    assert result.exit_code == 0, result.output
    line = " ".join(result.output.split())
    assert "running 0 · done 1 · failed 0" in line and "nodes in use 0/2" in line and "resolved 1" in line
    [batch] = tmp_path.glob("swe-*")
    assert json.loads((batch / "report.json").read_text())["resolved_ids"] == ["acme__textkit-14"]


def test_the_test_cluster_stays_on_loopback(ray_cluster):
    import ray

    ray.init(address=ray_cluster.address, log_to_driver=False)
    try:
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    finally:
        ray.shutdown()
