"""Where a batch's items run: in threads of this process (`local`) or as tasks on a Ray cluster (`ray`).

A batch hands the executor jobs: a function that runs one item into a folder and
returns its result. Both executors call the same function (`jobs.call`); the Ray
executor runs it into a temporary folder on a worker node and ships that folder
back as a tar blob, which the driver unpacks where the local executor would have
written it. Both start a job only when the batch's cost budget lets it (`budget`).
See evals/RAY.md.
"""

from evals.executors.budget import BatchCost, Budget
from evals.executors.jobs import Done, ExecutorOptions, Job
from evals.executors.run import run_jobs
from evals.executors.tally import Tally

__all__ = ["BatchCost", "Budget", "Done", "ExecutorOptions", "Job", "Tally", "run_jobs"]
