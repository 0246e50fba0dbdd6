"""The local executor: jobs in a thread pool of this process, writing straight into the batch folder."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from agent.models.shared import shared_engines
from core.interrupts import requested
from evals.executors.budget import Budget
from evals.executors.jobs import Done, ExecutorOptions, Job, call, this_node
from evals.executors.tally import Tally


def run_locally(
    jobs: Sequence[Job],
    out_dir: Path,
    options: ExecutorOptions,
    on_done: Callable[[Done], None],
    tally: Tally,
    budget: Budget,
) -> list[Done]:
    node = this_node()
    tally.executor, tally.nodes = "local", 1
    slots = max(1, options.workers)

    def run(job: Job) -> Done:
        tally.started(job.key, node)
        result, error, wall_s = call(job, out_dir)
        return Done(job.key, result, error, attempts=1, node=node, wall_s=wall_s)

    finished: list[Done] = []
    pending = deque(jobs)
    running: set[Future[Done]] = set()
    # The jobs share one engine of a local model, loaded by the first that asks and shut down once the last
    # has ended (on Ctrl-C too: the jobs still running then end at their next model call).
    with shared_engines():
        pool = ThreadPoolExecutor(max_workers=slots)
        try:
            # Jobs are handed to the pool one free slot at a time, so the budget decides each start.
            while pending or running:
                if requested():  # SIGINT or SIGTERM: the runs in flight stop at their next safe point
                    for job in pending:
                        tally.not_started(job.key)
                    pending.clear()
                start, skipped = budget.admit(pending, slots - len(running))
                for job in skipped:
                    tally.not_started(job.key)
                running.update(pool.submit(run, job) for job in start)
                if not running:
                    continue
                ready, running = wait(running, return_when=FIRST_COMPLETED)
                for future in ready:
                    done = future.result()
                    budget.finished(done)
                    tally.finished(done)
                    finished.append(done)
                    on_done(done)
        except BaseException:  # Ctrl-C: start nothing new; items already running finish and keep their run directories
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    return finished
