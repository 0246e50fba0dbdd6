"""Faults on a real Ray cluster: a killed worker, a task that fails for its own reason, Ctrl-C, a re-run."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from core.policy import HarnessPolicy
from evals.executors import ExecutorOptions
from evals.swe.batch import run_and_grade
from evals.swe.runner import SweBatchSpec
from evals.swe.suite import load_instances, suite_path
from tests.evals.executors.conftest import task_processes

SUBSET = ["acme__configlite-44", "acme__inventory-17", "acme__textkit-9"]
HARNESS = str(Path(sys.executable).parent / "harness")


def kill_first_task(cluster, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker process seen running a batch task, as an out-of-memory killer would."""
    while not stop.is_set():
        for proc in task_processes(cluster):
            proc.send_signal(signal.SIGKILL)
            killed.append(proc.pid)
            return
        time.sleep(0.02)


def remove_leftovers(client, pid: int) -> None:
    """What a killed worker could not clean up: its sandbox containers and its temporary folder."""
    for c in client.containers.list(all=True, filters={"label": f"harness.pid={pid}"}, ignore_removed=True):
        c.remove(force=True, v=True)
    for folder in (Path(tempfile.gettempdir()) / "harness-ray").glob(f"{pid}-*"):
        shutil.rmtree(folder, ignore_errors=True)


def test_a_killed_worker_is_retried_and_a_rerun_skips_finished_instances(docker_ready, ray_cluster, tmp_path):
    instances = [i for i in load_instances(suite_path("builtin")) if i.instance_id in SUBSET]
    options = ExecutorOptions(kind="ray", address=ray_cluster.address, retries=1)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_first_task, args=(ray_cluster, killed, stop))
    killer.start()
    try:
        report = run_and_grade(SweBatchSpec(instances, "oracle", HarnessPolicy(), tmp_path, options))
    finally:
        stop.set()
        killer.join()
        for pid in killed:
            remove_leftovers(docker_ready, pid)
    assert len(killed) == 1
    assert report.resolved_ids == sorted(SUBSET) and report.error_ids == []
    record = json.loads((tmp_path / "executor.json").read_text())
    assert record["retries"] == 1
    assert sorted(item["attempts"] for item in record["items"].values()) == [1, 1, 2]
    predictions = [
        json.loads(line)["instance_id"] for line in (tmp_path / "predictions.jsonl").read_text().splitlines()
    ]
    assert sorted(predictions) == sorted(SUBSET)  # none missing, none twice
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and p.name != "logs") == sorted(SUBSET)

    again = run_and_grade(SweBatchSpec(instances, "oracle", HarnessPolicy(), tmp_path, options))
    assert again == report
    record = json.loads((tmp_path / "executor.json").read_text())
    assert {item["status"] for item in record["items"].values()} == {"reused"}


def test_a_task_that_fails_for_its_own_reason_is_an_error_not_a_retry(docker_ready, ray_cluster, tmp_path):
    good = load_instances(suite_path("builtin"))[0]
    broken = good.model_copy(update={"instance_id": "acme__noimage-1", "image": "harness-no-such-image:1"})
    report = run_and_grade(
        SweBatchSpec(
            [broken, good],
            "oracle",
            HarnessPolicy(),
            tmp_path,
            ExecutorOptions(kind="ray", address=ray_cluster.address, retries=1),
        )
    )
    assert report.error_ids == ["acme__noimage-1"] and report.resolved_ids == [good.instance_id]
    record = json.loads((tmp_path / "executor.json").read_text())
    assert record["retries"] == 0 and record["items"]["acme__noimage-1"]["attempts"] == 1
    assert "environment_error" in (tmp_path / "acme__noimage-1" / "events.jsonl").read_text()


# A process started in the background of a shell without job control (a CI runner's, say) inherits
# SIGINT ignored, and Python then never turns it into KeyboardInterrupt: the driver is started with
# SIGINT at its default, as a terminal's Ctrl-C finds it.
WITH_CTRL_C = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])",
]


def test_ctrl_c_cancels_outstanding_games_and_resume_plays_the_rest(ray_cluster, tmp_path):
    args = [
        HARNESS,
        "chess",
        "--games",
        "6",
        "--model",
        "player:random",
        "--opponent",
        "random",
        "--max-plies",
        "200",
        "--analysis-depth",
        "0",
        "--seed",
        "1",
        "--executor",
        "ray",
        "--ray-address",
        ray_cluster.address,
    ]
    driver = subprocess.Popen(
        [*WITH_CTRL_C, *args, "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.time() + 120
        while not list(tmp_path.glob("*/batch.json")) and time.time() < deadline and driver.poll() is None:
            time.sleep(0.1)
        running = {p.pid for p in task_processes(ray_cluster)}  # workers whose games the Ctrl-C cancels
        driver.send_signal(signal.SIGINT)  # Ctrl-C once the first game is on disk
        out, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode != 0, out
    (folder,) = tmp_path.iterdir()
    kept = json.loads((folder / "batch.json").read_text())["games"]
    assert 1 <= len(kept) < 6
    for game in kept:
        assert (folder / game["run_dir"] / "summary.json").exists()
    time.sleep(2)
    assert task_processes(ray_cluster) == []  # nothing left running on the cluster

    resumed = subprocess.run([*args, "--resume", str(folder)], capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    games = json.loads((folder / "batch.json").read_text())["games"]
    assert [g["game"] for g in games] == [1, 2, 3, 4, 5, 6]
    assert {g["game"]: g["run_dir"] for g in kept}.items() <= {g["game"]: g["run_dir"] for g in games}.items()
    assert len({g["run_dir"] for g in games}) == 6
    assert all((folder / g["run_dir"] / "summary.json").exists() for g in games)
    statuses = [item["status"] for item in json.loads((folder / "executor.json").read_text())["items"].values()]
    assert statuses.count("reused") == len(kept) and statuses.count("done") == 6 - len(kept)
    # The cancelled tasks left no scratch folders behind.
    scratch = Path(tempfile.gettempdir()) / "harness-ray"
    assert running and [f.name for f in scratch.iterdir() if int(f.name.split("-")[0]) in running] == []
