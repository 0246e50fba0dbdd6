"""A batch's figures over its runs, read the same way by the batch page and the markdown: the cost to count
(evals.reports.recorded.cost_total), the harness's ideal prefix reuse, and the imported runs' recorded totals."""

from __future__ import annotations

from dataclasses import dataclass

from agent.models.pricing import format_usd
from evals.reports.load import RunData
from evals.reports.recorded import CostTotal, cost_total


def percent(rate: float | None) -> str:
    return f"{rate:.0%}" if rate is not None else "—"


def batch_cost(runs: list[RunData]) -> CostTotal:
    return cost_total([(r.cost, r.recorded) for r in runs])


def run_cost(run: RunData) -> float | None:
    """The cost a batch counts for a run: the price table's, else the one its source recorded (as cost_total)."""
    if run.cost is not None:
        return run.cost
    return run.recorded.cost_usd if run.recorded else None


def ideal_reuse(runs: list[RunData]) -> float | None:
    """Tokens each prompt shares with an earlier prompt of its run, over all prompt tokens, by the harness's count."""
    counted = sum(r.counted_tokens for r in runs)
    return sum(r.prefix_reused for r in runs) / counted if counted else None


@dataclass(frozen=True)
class SourceTotals:
    """What the sources of a batch's imported runs recorded, summed."""

    by: str
    runs: int
    costed: int  # imported runs with a recorded cost
    cost_usd: float | None  # their recorded costs summed; None unless every imported run has one
    prompt_tokens: int
    cached_tokens: int

    @property
    def cost_text(self) -> str:
        if self.cost_usd is not None:
            return f"{format_usd(self.cost_usd)} over {self.runs} runs"
        return f"unknown ({self.costed} of {self.runs} runs have a recorded cost)"

    @property
    def cost_note(self) -> str:
        missing = "" if self.cost_usd is not None else f"; {self.costed} of {self.runs} runs have one"
        return f"recorded by {self.by}{missing}"

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None


def source_totals(runs: list[RunData]) -> SourceTotals | None:
    """None when no run of the batch was imported."""
    sources = [r.recorded for r in runs if r.recorded is not None]
    if not sources:
        return None
    costs = [s.cost_usd for s in sources if s.cost_usd is not None]
    return SourceTotals(
        by=", ".join(dict.fromkeys(s.by for s in sources)),
        runs=len(sources),
        costed=len(costs),
        cost_usd=sum(costs) if len(costs) == len(sources) else None,
        prompt_tokens=sum(s.prompt_tokens for s in sources),
        cached_tokens=sum(s.cached_tokens for s in sources),
    )
