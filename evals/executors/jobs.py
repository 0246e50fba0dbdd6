"""Jobs, their outcomes and the executor options: what a batch hands an executor, and what both executors share."""

from __future__ import annotations

import importlib.util
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import HarnessError

EXECUTORS = ("local", "ray")
NO_RAY = "--executor ray needs Ray, which is not installed: pip install 'harness[ray]' (or pip install 'ray>=2.40')."


@dataclass(frozen=True)
class ExecutorOptions:
    kind: str = "local"  # local | ray
    workers: int = 1  # local: threads; ray: CPUs of the Ray instance started for the batch (no --ray-address)
    address: str | None = None  # ray: a running cluster ("auto", "HOST:PORT", "ray://HOST:PORT"); None starts one here
    cpus: float = 1.0  # ray: CPUs each task asks for
    memory_mb: int | None = None  # ray: memory each task asks for
    retries: int = 1  # ray: runs again of a task whose worker process or node died

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise HarnessError(f"Unknown executor {self.kind!r}; choose {' or '.join(EXECUTORS)}.")
        if self.retries < 0:
            raise HarnessError("retries must be 0 or more.")
        if self.kind != "ray" and (self.address is not None or self.memory_mb is not None):
            raise HarnessError(
                "--ray-address and --task-memory-mb are for --executor ray; add it, or leave them out to run here."
            )
        if self.kind == "ray":
            require_ray()


def require_ray() -> None:
    """Fail before a batch starts, not after its folder exists (without importing Ray yet)."""
    if importlib.util.find_spec("ray") is None:
        raise HarnessError(NO_RAY)


@dataclass(frozen=True)
class Job:
    """`fn(*args, out_dir)` runs one item and writes its run directories under `out_dir`.

    The function must be importable by name (a module-level function) and its arguments
    picklable, so that a Ray worker can run it. Paths in its result point into the
    `out_dir` it was given, which on Ray is a temporary folder on the worker: callers
    find the run directory on the driver by its folder name.
    """

    key: str
    fn: Callable[..., Any]
    args: tuple = ()
    docker: bool = False  # needs a Docker engine: on Ray it asks for the custom `docker` resource


@dataclass(frozen=True)
class Done:
    key: str
    result: Any = None
    error: str | None = None  # the harness failed on this item (it raised, or its worker died past the retries)
    attempts: int = 1
    node: str = ""
    wall_s: float = 0.0  # the job's own time on its node (its last attempt), without queueing or transfer


def call(job: Job, out_dir: Path) -> tuple[Any, str | None, float]:
    """Run one job into `out_dir`: the single code path both executors share."""
    start = time.perf_counter()
    try:
        result, error = job.fn(*job.args, out_dir), None
    except Exception as e:  # one item's failure must not lose the others; its partial run directory stays
        result, error = None, f"{type(e).__name__}: {e}"
    return result, error, round(time.perf_counter() - start, 3)


def this_node() -> str:
    return socket.gethostname()
