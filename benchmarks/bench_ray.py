"""The bundled SWE suite with the oracle agent: local executor vs Ray on this machine.

Runs the whole suite (run + grade per instance) twice with the same number of
slots, first in threads of this process, then as Ray tasks on a Ray instance
started here (its start-up is timed apart), checks that both batches resolve the
same instances and leave the same files, and from the per-instance times in
executor.json estimates what a cluster of more nodes would take.

    .venv/bin/python benchmarks/bench_ray.py [--workers 2] [--suite builtin]

Needs the Docker engine and the base image (`bash scripts/setup.d/10-docker.sh`) and Ray
(`pip install 'harness[ray]'`). Task images are built before the timing starts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from core.policy import HarnessPolicy  # noqa: E402
from evals.executors import ExecutorOptions  # noqa: E402
from evals.swe.batch import run_and_grade  # noqa: E402
from evals.swe.image import instance_image  # noqa: E402
from evals.swe.runner import SweBatchSpec  # noqa: E402
from evals.swe.suite import load_instances, suite_path  # noqa: E402
from sandboxes.docker_container import docker_client  # noqa: E402


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def timed_batch(instances, folder: Path, options: ExecutorOptions) -> tuple[float, object]:
    start = time.perf_counter()
    report = run_and_grade(SweBatchSpec(instances, "oracle", HarnessPolicy(), folder, options))
    return time.perf_counter() - start, report


def item_times(folder: Path) -> list[float]:
    return [item["wall_s"] for item in json.loads((folder / "executor.json").read_text())["items"].values()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2, help="slots: threads locally, CPUs of the Ray instance")
    ap.add_argument("--suite", default="builtin")
    args = ap.parse_args()
    instances = load_instances(suite_path(args.suite))
    client = docker_client()
    for inst in instances:  # built once and cached by content hash; not part of either timing
        instance_image(inst, client, log=lambda s: None)

    import ray

    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        local_s, local = timed_batch(instances, Path(tmp) / "local", ExecutorOptions(workers=args.workers))
        start = time.perf_counter()
        ray.init(
            num_cpus=args.workers,
            resources={"docker": args.workers},
            include_dashboard=False,
            object_store_memory=256 * 2**20,
            log_to_driver=False,
        )
        startup_s = time.perf_counter() - start
        try:
            ray_s, on_ray = timed_batch(instances, Path(tmp) / "ray", ExecutorOptions(kind="ray", workers=args.workers))
        finally:
            ray.shutdown()
        same_files = tree(Path(tmp) / "local") == tree(Path(tmp) / "ray")
        same_report = (Path(tmp) / "local" / "report.json").read_bytes() == (
            Path(tmp) / "ray" / "report.json"
        ).read_bytes()
        same_predictions = (Path(tmp) / "local" / "predictions.jsonl").read_bytes() == (
            Path(tmp) / "ray" / "predictions.jsonl"
        ).read_bytes()
        per_item = item_times(Path(tmp) / "local")
        ray_items = item_times(Path(tmp) / "ray")

    n = len(instances)
    print(
        f"bundled suite {args.suite!r}: {n} instances, oracle agent, {args.workers} slots, {os.cpu_count()} CPUs here"
    )
    print(f"  local executor   {local_s:6.1f} s   resolved {local.resolved_instances}/{n}")
    print(
        f"  ray executor     {ray_s:6.1f} s   resolved {on_ray.resolved_instances}/{n}   "
        f"(+ {startup_s:.1f} s to start Ray here)"
    )
    print(
        f"  same resolved ids: {local.resolved_ids == on_ray.resolved_ids}; same files: {same_files}; "
        f"report.json identical: {same_report}; predictions.jsonl identical: {same_predictions}"
    )
    mean, longest = statistics.mean(per_item), max(per_item)
    print(
        f"  per instance (run + grade): mean {mean:.2f} s, max {longest:.2f} s locally; "
        f"mean {statistics.mean(ray_items):.2f} s as Ray tasks"
    )
    overhead = ray_s - sum(ray_items) / args.workers
    print(
        f"  Ray's cost per batch here: about {max(overhead, 0):.1f} s beyond the tasks' own time "
        f"(scheduling, tar blobs, unpacking), plus its start-up"
    )
    print("expected wall time on a cluster, from these per-instance times (images already on every node):")
    for size in (n, 500):
        for nodes, slots in ((1, args.workers), (4, 8), (16, 8)):
            print(
                f"  {size:4d} instances on {nodes:2d} node(s) x {slots} sandboxes: ~{projected(size, nodes * slots, mean, longest):7.1f} s"
            )
    print(
        "  wall ≈ ceil(instances / all sandbox slots) x time per instance, never below the slowest one, plus Ray's "
        "start-up. It scales with slots until a node's Docker engine, disk or CPUs are the limit. A real agent's "
        "instance takes minutes (model calls), not these seconds, so Ray's few seconds per batch vanish; a node's "
        "first use of a task image adds its build (a minute or more) unless the images come from a registry."
    )


def projected(instances: int, slots: int, per_instance: float, longest: float) -> float:
    return max(math.ceil(instances / slots) * per_instance, longest)


if __name__ == "__main__":
    main()
