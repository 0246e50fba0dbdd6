"""A batch of Harbor tasks: one job per task on the SWE batch's machinery (evals/swe/runner.run_batch), so
it has the same folder, resume, executors (local threads or Ray) and cost budget; then report.json.

    batch folder/
      <task>/              the task's run directory, with grade.json and artifacts/test-stdout.txt
      batch.json           model, policy, cost (as a SWE batch's)
      executor.json        where and how long each task ran
      report.json          evals/tasks/report.py
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import closing
from functools import partial
from pathlib import Path

import docker

from agent.journal.store import write_json_atomic
from agent.memory_dir import MemoryDir
from core.policy import HarnessPolicy
from evals.executors import Tally
from evals.swe.infra import INFRA_RETRIES
from evals.swe.runner import InstanceResult, SweBatchSpec, clear_incomplete, refuse_to_start, run_batch, summarized
from evals.tasks.agents import check_oracle
from evals.tasks.report import TasksReport, tasks_report
from evals.tasks.runner import read_grade, run_task, write_grade
from evals.tasks.task import HarborTask
from evals.tasks.verifier import Verdict


def run_one(
    task: HarborTask,
    model: str,
    policy: HarnessPolicy,
    prices: Path | None,
    out_dir: Path,
    rewrites: Mapping[str, str] | None = None,
    infra_retries: int = INFRA_RETRIES,
    memory: MemoryDir | None = None,
) -> InstanceResult:
    """A batch job: one task into `out_dir`, with a Docker client of the process that runs it; run again, up to
    `infra_retries` times, while the machine fails it (its image does not build, its container does not
    start, the engine stops answering), the failed runs kept as .<id>.incomplete-*."""
    for attempt in range(1, infra_retries + 2):
        with closing(docker.from_env(timeout=300)) as client:
            result = run_task(task, model, policy, out_dir, client, rewrites, prices=prices, memory=memory)
        verdict = read_grade(Path(result.run_dir), task.instance_id)
        if verdict is None or verdict.infra_failure is None:
            return result
        verdict.infra_failure.attempts = attempt
        write_grade(Path(result.run_dir), task.instance_id, verdict)
        if attempt <= infra_retries:
            clear_incomplete(out_dir, task.instance_id)
    return result


def finished(batch_dir: Path, task_id: str) -> InstanceResult | None:
    """A run with its summary and its verdict is complete; a re-run of the batch keeps it, unless its
    environment stopped it (an image that did not build) or the machine failed it, which a re-run tries again."""
    verdict = read_grade(batch_dir / task_id, task_id)
    if verdict is None or verdict.infra_failure is not None:
        return None
    result = summarized(batch_dir, task_id, None)
    return None if result is None or result.stop_reason == "environment_error" else result


def check_batch(spec: SweBatchSpec[HarborTask]) -> None:
    """The batch's refusals: the oracle needs every task's solution, and those of evals.swe.runner.refuse_to_start;
    made before a command says or builds anything."""
    if spec.model == "oracle":
        check_oracle(spec.instances)
    refuse_to_start(spec, finished)


def run_tasks(
    spec: SweBatchSpec[HarborTask],
    rewrites: Mapping[str, str] | None = None,
    on_verdict: Callable[[InstanceResult, Verdict], None] = lambda r, v: None,
    tally: Tally | None = None,
) -> TasksReport:
    """Run and verify every task of the batch not finished yet, then write report.json."""
    check_batch(spec)
    verdicts: dict[str, Verdict] = {}

    def done(result: InstanceResult) -> None:
        verdict = read_grade(Path(result.run_dir), result.instance_id)
        if verdict is None:  # the harness failed on it before a verdict: an error task
            verdict = Verdict(resolved=False, error=result.error or "the task's run left no verdict")
            if Path(result.run_dir).is_dir():
                write_grade(Path(result.run_dir), result.instance_id, verdict)
        verdicts[result.instance_id] = verdict
        on_verdict(result, verdict)

    run_batch(
        spec,
        on_done=done,
        work=partial(run_one, rewrites=dict(rewrites or {}), infra_retries=spec.infra_retries),
        reuse=finished,
        tally=tally,
        predictions=False,
    )
    report = tasks_report([t.instance_id for t in spec.instances], verdicts)
    write_json_atomic(spec.batch_dir / "report.json", report.model_dump(mode="json"))
    return report
