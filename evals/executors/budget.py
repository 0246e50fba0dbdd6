"""A batch's spending: what its runs cost, and whether another run may start under `--max-cost-usd`.

A job starts only while the cost of the finished runs plus, for each run still going, the mean
cost of the finished ones (nothing while none has finished) stays below the budget. A job refused
while runs are going waits for them, as their real cost may leave room; once nothing runs and the
budget is reached, every job left is skipped: not started, and not a failure. Both executors ask
`admit` on their driving thread, before each start and after each finish, so the same jobs start
whichever executor runs them (with one slot, always the same ones).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.models.pricing import format_total, format_usd, total
from evals.executors.jobs import Done, Job

Cost = tuple[float | None, int]  # a run's cost_usd (None: unknown) and its calls without a known cost


class BatchCost(BaseModel):
    """The `cost` of a batch's batch.json."""

    cost_usd: float | None = None  # the runs' cost_usd summed; None when no run's cost is known
    unpriced_calls: int = 0  # the runs' calls without a known cost: above 0, cost_usd is a lower bound
    max_cost_usd: float | None = None  # the batch's budget (--max-cost-usd), if it had one
    skipped_for_budget: int = 0  # runs not started because the budget was reached

    def line(self, folder: Path, item: str) -> str:
        """One line for the console: the cost, the budget, and how to go on when it stopped the batch."""
        said = f"cost: {format_total(self.cost_usd, self.unpriced_calls)}"
        if self.max_cost_usd is None:
            return said
        said += f" of a {format_usd(self.max_cost_usd)} budget"
        n = self.skipped_for_budget
        if n:
            said += (
                f"; the budget was reached and {n} {item}{'s were' if n > 1 else ' was'} not started. "
                f"To run {'them' if n > 1 else 'it'}, run again with --resume {folder} and a larger --max-cost-usd."
            )
        return said


@dataclass
class Budget:
    """`cost_of` gives a finished job's cost from its result; without `limit_usd` every job starts."""

    limit_usd: float | None = None
    cost_of: Callable[[Any], Cost] = lambda result: (None, 0)
    costs: list[Cost] = field(default_factory=list)  # of the finished runs, reused ones included
    running: int = 0  # admitted and not finished
    skipped: list[str] = field(default_factory=list)  # keys of the jobs the budget did not start

    def count(self, cost: Cost) -> None:
        """A finished run: one of this batch's jobs, or one an earlier run of the batch left."""
        self.costs.append(cost)

    def finished(self, done: Done) -> None:
        self.running -= 1
        if done.error is None:  # a job that raised left no result to read a cost from
            self.count(self.cost_of(done.result))

    def room(self) -> bool:
        if self.limit_usd is None:
            return True
        known = [c for c, _ in self.costs if c is not None]
        spent = sum(known)
        expected = spent / len(known) if known else 0.0
        return spent + self.running * expected < self.limit_usd

    def admit(self, pending: deque[Job], free: int) -> tuple[list[Job], list[Job]]:
        """Take from `pending` the jobs to start now (at most `free`), and the jobs to skip: every job
        left, once the budget is reached and nothing runs (nothing can change then)."""
        start: list[Job] = []
        while pending and len(start) < free:
            if self.room():
                start.append(pending.popleft())
                self.running += 1
            elif self.running:
                break
            else:
                skipped = list(pending)
                pending.clear()
                self.skipped.extend(job.key for job in skipped)
                return start, skipped
        return start, []

    def record(self) -> BatchCost:
        cost_usd, _ = total(c for c, _ in self.costs)
        return BatchCost(
            cost_usd=cost_usd,
            unpriced_calls=sum(n for _, n in self.costs),
            max_cost_usd=self.limit_usd,
            skipped_for_budget=len(self.skipped),
        )
