"""A real two-node Ray cluster on this machine for the executor tests, started once and shut down at the end.

The head node offers one CPU and the custom `docker` resource (it has the Docker
engine); the second node offers one CPU and no `docker`, so SWE tasks may land
only on the head while chess games spread over both. Every Ray process belongs
to this cluster and is ended by it, never by name.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import psutil
import pytest

from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)

OBJECT_STORE_BYTES = 150 * 2**20  # every node on 127.0.0.1: tests/conftest.py sets LOOPBACK_ONLY


@pytest.fixture(scope="session")
def ray_cluster():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="rh-", dir="/tmp")  # short: Ray's unix socket paths have a length limit
    # Ray writes the cluster's address file into RAY_TMPDIR/ray whatever temp_dir says, and does not
    # create that folder: point it at ours, so nothing depends on an earlier Ray run on this machine.
    os.environ["RAY_TMPDIR"] = temp
    os.makedirs(os.path.join(temp, "ray"), exist_ok=True)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {"docker": 1},
            "object_store_memory": OBJECT_STORE_BYTES,
            "include_dashboard": False,
            "temp_dir": temp,
        },
    )
    try:
        cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def cluster_pids(cluster) -> set[int]:
    """The daemons (raylets, GCS) of our cluster: the ancestors of every worker process it runs."""
    pids = set()
    for node in [cluster.head_node, *cluster.worker_nodes]:
        for infos in node.all_processes.values():
            pids.update(info.process.pid for info in infos)
    return pids


def task_processes(cluster, name: str = "harness_job") -> list[psutil.Process]:
    """Worker processes of our cluster running a task called `name` (Ray sets the title to `ray::<name>`)."""
    ours = cluster_pids(cluster)
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            title = " ".join(proc.info["cmdline"] or [])
            if title.startswith(f"ray::{name}") and any(p.pid in ours for p in proc.parents()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def node_ids_with(cluster, resource: str) -> set[str]:
    """Short ids (first 8 hex digits, as executor.json names them) of the nodes offering `resource`."""
    import ray

    ray.init(address=cluster.address, log_to_driver=False)
    try:
        return {n["NodeID"][:8] for n in ray.nodes() if n.get("Alive") and n["Resources"].get(resource)}
    finally:
        ray.shutdown()
