"""The Ray executor: each job is a Ray task that runs into a temporary folder on its node
and returns the result with that folder packed as a tar blob; the driver unpacks it into
the batch folder, so a batch on Ray leaves the same files as a local one.

With a cost budget the driver hands Ray no more tasks than the cluster runs at once, so each one
starts only once the budget has let it (Ray would start a queued task without asking); without
one, every task is handed over at the start.

Retries are the driver's, not Ray's: a task whose worker process or node died is
submitted again (up to `retries` times) and its attempt number is recorded; a task
that raised is an error at once, as re-running the same code would raise again.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import cast

from agent.models.shared import shared_engines
from agent.telemetry import ENDPOINT_ENV, TRACES_ENDPOINT_ENV
from core.errors import HarnessError
from core.interrupts import Abandoned, requested
from evals.executors.budget import Budget
from evals.executors.jobs import NO_RAY, Done, ExecutorOptions, Job, call
from evals.executors.pack import pack, unpack
from evals.executors.tally import Tally

try:
    import ray
    from ray import ObjectRefGenerator
    from ray import exceptions as rex
except ImportError:  # the local executor never needs Ray
    raise HarnessError(NO_RAY) from None

# Ray's object store for a batch it starts itself: results and run directories are small.
LOCAL_OBJECT_STORE_BYTES = 256 * 2**20
CANCEL_GRACE_S = 10.0
# The worker process or its node went away: the job itself may be fine, so it runs again.
WORKER_LOST = (
    rex.WorkerCrashedError,
    rex.NodeDiedError,
    rex.LocalRayletDiedError,
    rex.ObjectLostError,
    rex.OwnerDiedError,
)


def node_name() -> str:
    ctx = ray.get_runtime_context()
    return f"{ray.util.get_node_ip_address()}/{ctx.get_node_id()[:8]}"


@ray.remote(num_returns="streaming", max_retries=0)
def harness_job(job: Job, folder: str):
    """First yields where it runs (for the progress line), then (result, error, seconds, tar blob).

    `folder` is the driver's working folder: the job runs in it, as a local one does."""
    yield node_name(), os.getpid()
    root = scratch_root()
    sweep(root)
    # A local model is loaded for the task and shut down when it ends: a worker process kept between tasks
    # (and between batches, on a cluster that outlives this one) holds no weights while idle.
    with (
        tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=root) as tmp,
        working_in(folder),
        shared_engines(),
    ):
        result, error, wall_s = call(job, Path(tmp))
        blob = pack(Path(tmp))
    # Yielded after the folder is gone: once the driver has the last item, nothing is left to clean up.
    yield result, error, wall_s, blob


@contextmanager
def working_in(folder: str) -> Iterator[None]:
    """Run in the driver's working folder where this node has it, so that every path the user gave relative to
    where they ran `harness` (a scripted model, a price table, a policy's MCP server and its `cwd`, a tasks
    folder, `--repos`) names the same file as with the local executor. A worker starts in the folder of its
    node's `ray start` instead, and keeps running tasks of later batches: the folder it had is restored after."""
    before = os.getcwd()
    if not os.path.isdir(folder):  # another machine without that folder: relative paths fail as absolute ones would
        yield
        return
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def scratch_root() -> Path:
    root = Path(tempfile.gettempdir()) / "harness-ray"
    root.mkdir(exist_ok=True)
    return root


def sweep(root: Path) -> None:
    """Remove the folders of tasks whose worker process is gone (killed, or cancelled mid-run):
    each folder is named by the pid of the worker that made it, and a dead one cannot clean up."""
    for folder in root.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def connect(options: ExecutorOptions) -> bool:
    """Join the cluster at `options.address`, or start a small one here. True when we must shut it down.

    A process already connected to Ray (a notebook, a benchmark) keeps its connection and owns it."""
    if ray.is_initialized():
        return False
    carried = {k: os.environ[k] for k in (ENDPOINT_ENV, TRACES_ENDPOINT_ENV) if k in os.environ}
    runtime_env = {"env_vars": carried} if carried else None  # a run's spans leave from the worker that runs it
    if options.address:
        ray.init(address=options.address, log_to_driver=False, logging_level=logging.WARNING, runtime_env=runtime_env)
    else:
        slots = max(1, options.workers)
        ray.init(
            num_cpus=slots,
            resources={"docker": slots} if docker_here() else {},
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env=runtime_env,
        )
    return True


def docker_here() -> bool:
    try:
        import docker

        with closing(docker.from_env(timeout=10)) as client:
            return bool(client.ping())
    except Exception:
        return False


def submit(job: Job, options: ExecutorOptions) -> ObjectRefGenerator:
    resources = {"docker": 1} if job.docker else {}
    memory = options.memory_mb * 2**20 if options.memory_mb else None
    return harness_job.options(num_cpus=options.cpus, memory=memory, resources=resources).remote(job, os.getcwd())


def check_feasible(jobs: Sequence[Job]) -> None:
    """Ray would wait forever for a resource no node has; say so instead."""
    if any(j.docker for j in jobs) and not ray.cluster_resources().get("docker"):
        raise HarnessError(
            "No node of the Ray cluster offers the `docker` resource these tasks need. Start the nodes "
            "that have a Docker engine with `ray start ... --resources='{\"docker\": N}'` "
            "(N sandboxes at once); see evals/RAY.md."
        )


def slots(jobs: Sequence[Job], options: ExecutorOptions) -> int:
    """How many of these tasks the cluster runs at once, by its CPUs and `docker` resource."""
    resources = ray.cluster_resources()
    n = resources.get("CPU", 0.0) / options.cpus if options.cpus else float(len(jobs))
    if any(j.docker for j in jobs):
        n = min(n, resources.get("docker", 0.0))
    return max(1, min(len(jobs), int(n)))


def run_on_ray(
    jobs: Sequence[Job],
    out_dir: Path,
    options: ExecutorOptions,
    on_done: Callable[[Done], None],
    tally: Tally,
    budget: Budget,
) -> list[Done]:
    owned = connect(options)
    try:
        check_feasible(jobs)
        tally.executor = "ray"
        tally.nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        window = len(jobs) if budget.limit_usd is None else slots(jobs, options)
        return drive(jobs, out_dir, options, on_done, tally, budget, window)
    finally:
        if owned:
            ray.shutdown()


def drive(
    jobs: Sequence[Job],
    out_dir: Path,
    options: ExecutorOptions,
    on_done: Callable[[Done], None],
    tally: Tally,
    budget: Budget,
    window: int,
) -> list[Done]:
    """Keep at most `window` tasks with Ray, each let start by `budget`, until every job is done or skipped."""
    by_key = {j.key: j for j in jobs}
    attempts = {j.key: 1 for j in jobs}
    nodes: dict[str, str] = {}
    pending = deque(jobs)
    outstanding: dict[ObjectRefGenerator, str] = {}
    finished: list[Done] = []

    def finish(done: Done) -> None:
        budget.finished(done)
        tally.finished(done)
        finished.append(done)
        on_done(done)

    try:
        while pending or outstanding:
            if (signal_name := requested()) is not None:  # SIGINT or SIGTERM here: as Ctrl-C, below
                raise Abandoned(signal_name)
            start, skipped = budget.admit(pending, window - len(outstanding))
            for job in skipped:
                tally.not_started(job.key)
            outstanding.update((submit(job, options), job.key) for job in start)
            if not outstanding:
                continue
            ready, _ = ray.wait(list(outstanding), num_returns=1, timeout=1.0)
            # ray.wait hands back what it was given, streaming generators here; its annotation widens them to ObjectRef
            for gen in cast("list[ObjectRefGenerator]", ready):
                key = outstanding.pop(gen)
                try:
                    item = ray.get(next(gen))
                except StopIteration:  # the task yields twice; ending early means it went wrong
                    finish(Done(key, None, "the task ended without a result", attempts[key], nodes.get(key, "")))
                    continue
                except WORKER_LOST as e:
                    if attempts[key] <= options.retries:
                        attempts[key] += 1
                        tally.retrying(key)
                        outstanding[submit(by_key[key], options)] = key
                    else:
                        finish(
                            Done(
                                key,
                                None,
                                f"the worker died {attempts[key]} time(s): {type(e).__name__}",
                                attempts[key],
                                nodes.get(key, ""),
                            )
                        )
                    continue
                except rex.RayError as e:  # the task could not run (e.g. its arguments did not unpickle)
                    finish(Done(key, None, f"{type(e).__name__}: {e}", attempts[key], nodes.get(key, "")))
                    continue
                if len(item) == 2:  # the task started on a node: wait for its result next
                    nodes[key] = item[0]
                    tally.started(key, item[0])
                    outstanding[gen] = key
                    continue
                result, error, wall_s, blob = item
                unpack(blob, out_dir)
                finish(Done(key, result, error, attempts[key], nodes.get(key, ""), wall_s))
    except (
        BaseException
    ):  # Ctrl-C, a signal: cancel what is left (each run stops gracefully); finished items are on disk
        cancel(list(outstanding))
        raise
    return finished


def cancel(gens: list) -> None:
    """Queued tasks never start; running ones get a KeyboardInterrupt, so their sandboxes close and their
    temporary folders go, and we wait a little for that before the driver lets go of the cluster."""
    for gen in gens:
        ray.cancel(gen, force=False)
    deadline = time.monotonic() + CANCEL_GRACE_S
    for gen in gens:  # a cancelled task's next item resolves once the task has really ended (its finally blocks ran)
        try:
            ray.get(next(gen), timeout=max(0.1, deadline - time.monotonic()))
        except (StopIteration, rex.RayError):  # cancelled, failed or past the grace period
            pass
