"""report.json of a tasks batch: the SWE report's counts and id lists, with each task's reward beside them.

A task is resolved at reward 1.0; `unresolved` holds every other reward (0.5 included); `error` the tasks
whose environment or verifier failed (no reward). Of those, the machine's failures (an image that did not
build, a container that did not start, an engine that stopped answering: evals/swe/infra.py) are also
`infra_failure_ids`, with their causes and attempts, and are left out of `resolve_rate`, which
`resolve_rate_over` says how many tasks it covers. `mean_reward` is Harbor's mean: over every task that ran,
a missing reward counting 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from evals.swe.infra import InfraFailure, resolve_line
from evals.tasks.verifier import Verdict


class TasksReport(BaseModel):
    total_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    error_instances: int
    mean_reward: float | None
    completed_ids: list[str]
    incomplete_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    error_ids: list[str]
    rewards: dict[str, float | None]
    infra_failure_instances: int = 0
    infra_failure_ids: list[str] = []
    infra_failures: dict[str, InfraFailure] = {}
    resolve_rate: float | None = None
    resolve_rate_over: int = 0
    schema_version: int = 1

    def summary(self) -> str:
        return resolve_line(self.resolved_instances, self.resolve_rate_over, self.infra_failures)


def tasks_report(task_ids: Sequence[str], verdicts: Mapping[str, Verdict]) -> TasksReport:
    ids = sorted(task_ids)
    ran = [i for i in ids if i in verdicts]
    errors = [i for i in ran if verdicts[i].error is not None]
    completed = [i for i in ran if i not in errors]
    resolved = [i for i in completed if verdicts[i].resolved]
    rewards = {i: verdicts[i].reward for i in ran}
    infra = {i: f for i in errors if (f := verdicts[i].infra_failure) is not None}
    over = len(ran) - len(infra)
    return TasksReport(
        total_instances=len(ids),
        completed_instances=len(completed),
        resolved_instances=len(resolved),
        unresolved_instances=len(completed) - len(resolved),
        error_instances=len(errors),
        mean_reward=sum(r or 0.0 for r in rewards.values()) / len(ran) if ran else None,
        completed_ids=completed,
        incomplete_ids=[i for i in ids if i not in verdicts],
        resolved_ids=resolved,
        unresolved_ids=[i for i in completed if i not in resolved],
        error_ids=errors,
        rewards=rewards,
        infra_failure_instances=len(infra),
        infra_failure_ids=sorted(infra),
        infra_failures=infra,
        resolve_rate=round(len(resolved) / over, 4) if over else None,
        resolve_rate_over=over,
    )
