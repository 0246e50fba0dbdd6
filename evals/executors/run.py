"""The one entry point: run a batch's jobs on the executor its options pick."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from evals.executors.budget import Budget
from evals.executors.jobs import Done, ExecutorOptions, Job
from evals.executors.local import run_locally
from evals.executors.tally import Tally

# Ray on Linux registers nodes under the machine's outward address unless this is "0"; Ray
# reads it once, at import. A Ray instance started for one batch serves this machine only.
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def run_jobs(
    jobs: Sequence[Job],
    out_dir: Path,
    options: ExecutorOptions,
    on_done: Callable[[Done], None],
    tally: Tally | None = None,
    budget: Budget | None = None,
) -> list[Done]:
    """Run every job that `budget` lets start; `on_done` is called on this thread as each finishes. Returns
    the outcomes in job order (the jobs the budget skipped have none: they are in `budget.skipped`)."""
    tally = tally or Tally(total=len(jobs))
    budget = budget or Budget()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    if options.kind == "ray":
        if not options.address:
            os.environ.setdefault(LOOPBACK_ONLY, "0")
        from evals.executors.ray_executor import run_on_ray  # Ray is optional: imported only when asked for

        done = run_on_ray(jobs, Path(out_dir), options, on_done, tally, budget)
    else:
        done = run_locally(jobs, Path(out_dir), options, on_done, tally, budget)
    order = {job.key: i for i, job in enumerate(jobs)}
    return sorted(done, key=lambda d: order[d.key])
