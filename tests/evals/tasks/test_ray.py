"""A tasks batch on a real two-node Ray cluster leaves the same verdicts and report as the local executor."""

from __future__ import annotations

import json

from core.policy import HarnessPolicy
from evals.executors import ExecutorOptions
from evals.swe.runner import SweBatchSpec
from evals.tasks.batch import run_tasks
from evals.tasks.task import find_tasks
from tests.evals.executors.conftest import node_ids_with, ray_cluster  # noqa: F401  (the cluster, started once)
from tests.evals.tasks.conftest import REWRITES, TASKS


def test_a_tasks_batch_on_ray_equals_the_local_one(docker_ready, ray_cluster, tmp_path):  # noqa: F811
    tasks = find_tasks([TASKS / "half-reward", TASKS / "memory-limit"])
    local = run_tasks(SweBatchSpec(tasks, "oracle", HarnessPolicy(), tmp_path / "local"), REWRITES)
    options = ExecutorOptions(kind="ray", address=ray_cluster.address)
    on_ray = run_tasks(SweBatchSpec(tasks, "oracle", HarnessPolicy(), tmp_path / "ray", options), REWRITES)
    assert local == on_ray and on_ray.rewards == {"half-reward": 0.5, "memory-limit": 1.0}
    assert (tmp_path / "local" / "report.json").read_bytes() == (tmp_path / "ray" / "report.json").read_bytes()
    for task in tasks:
        name = f"{task.instance_id}/grade.json"
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    record = json.loads((tmp_path / "ray" / "executor.json").read_text())
    assert record["executor"] == "ray"
    assert {item["node"].split("/")[1] for item in record["items"].values()} <= node_ids_with(ray_cluster, "docker")
