"""Round trip of `true` in a Docker sandbox: persistent shell vs docker-py exec_run vs `docker exec`.

Also the cold start (from `DockerSandbox.start()` to the first command's answer), the
cost of an `alive()` probe, and for a run's sandbox with a 20 MB workspace: a checkpoint,
reconnecting to the running container, and recreating it from the checkpoint.
Target: persistent shell median <= 2 ms and >= 25x faster than exec_run.

    .venv/bin/python benchmarks/bench_sandbox.py [--n 100]

Needs a running engine and the base image (`bash scripts/setup.d/10-docker.sh`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandboxes.docker import DockerSandbox  # noqa: E402
from sandboxes.docker_container import docker_client  # noqa: E402
from sandboxes.docker_runs import checkpoint, discard_checkpoints, reattach  # noqa: E402
from sandboxes.docker_shells import ShellState  # noqa: E402


def timed(fn, n: int) -> list[float]:
    fn()  # warm-up, not counted
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def run_sandbox_times(client, rounds: int = 3) -> dict[str, list[float]]:
    """Checkpoint, reconnect and recreate times (ms) of a run's sandbox holding 20 MB in 200 files."""
    times: dict[str, list[float]] = {"checkpoint": [], "reconnect": [], "recreate from checkpoint": []}
    with tempfile.TemporaryDirectory() as run_dir:
        box = DockerSandbox.start(client=client, run_dir=run_dir)
        box.exec("mkdir -p src && for i in $(seq 200); do head -c 100000 /dev/urandom > src/f$i; done", timeout=60)
        state = ShellState("/workspace/src", {"X": "1"})
        try:
            for step in range(rounds):
                t = time.perf_counter()
                checkpoint(box, step)
                times["checkpoint"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                box = reattach(run_dir, box.container_id, state, client=client).sandbox
                times["reconnect"].append((time.perf_counter() - t) * 1000)
                box.container.remove(force=True, v=True)
                t = time.perf_counter()
                box = reattach(run_dir, box.container_id, state, client=client).sandbox
                times["recreate from checkpoint"].append((time.perf_counter() - t) * 1000)
        finally:
            box.close()
            discard_checkpoints(run_dir, client)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    args = ap.parse_args()
    client = docker_client()

    colds = []
    for _ in range(5):
        t = time.perf_counter()
        sb = DockerSandbox.start(client=client)
        sb.exec("true", timeout=10)
        colds.append((time.perf_counter() - t) * 1000)
        sb.close()

    sb = DockerSandbox.start(client=client)
    try:

        def shell():
            assert sb.exec("true", timeout=10).exit_code == 0

        def exec_run():
            assert sb.container.exec_run(["true"], user=sb.options.user).exit_code == 0

        def cli():
            subprocess.run(["docker", "exec", "-u", sb.options.user, sb.container.id, "true"], check=True)

        rows = {
            "persistent shell": timed(shell, args.n),
            "docker-py exec_run": timed(exec_run, args.n),
            "docker exec CLI": timed(cli, args.n),
        }
        probes = timed(sb.alive, args.n)
    finally:
        sb.close()

    print(f"round trip of `true`, n={args.n} each")
    print(f"{'path':<22}{'median ms':>11}{'p95 ms':>10}")
    for name, xs in rows.items():
        print(f"{name:<22}{statistics.median(xs):>11.3f}{p95(xs):>10.3f}")
    base = statistics.median(rows["persistent shell"])
    print(f"exec_run / shell: {statistics.median(rows['docker-py exec_run']) / base:.0f}x")
    print(f"docker exec / shell: {statistics.median(rows['docker exec CLI']) / base:.0f}x")
    print(f"alive() probe: median {statistics.median(probes):.2f} ms, p95 {p95(probes):.2f} ms")
    print(
        f"cold start (start + first command), 5 runs: median {statistics.median(colds):.0f} ms, max {max(colds):.0f} ms"
    )
    for name, xs in run_sandbox_times(client).items():
        print(f"{name} (20 MB workspace), {len(xs)} runs: median {statistics.median(xs):.0f} ms, max {max(xs):.0f} ms")


if __name__ == "__main__":
    main()
