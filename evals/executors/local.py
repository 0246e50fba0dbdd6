"""The local executor: jobs in a thread pool of this process, writing straight into the batch folder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from evals.executors.jobs import Done, ExecutorOptions, Job, call, this_node
from evals.executors.tally import Tally


def run_locally(
    jobs: Sequence[Job], out_dir: Path, options: ExecutorOptions, on_done: Callable[[Done], None], tally: Tally
) -> list[Done]:
    node = this_node()
    tally.executor, tally.nodes = "local", 1

    def run(job: Job) -> Done:
        tally.started(job.key, node)
        result, error, wall_s = call(job, out_dir)
        return Done(job.key, result, error, attempts=1, node=node, wall_s=wall_s)

    finished: list[Done] = []
    pool = ThreadPoolExecutor(max_workers=max(1, options.workers))
    try:
        futures = [pool.submit(run, job) for job in jobs]
        for future in as_completed(futures):
            done = future.result()
            tally.finished(done)
            finished.append(done)
            on_done(done)
    except BaseException:  # Ctrl-C: start nothing new; items already running finish and keep their run directories
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return finished
