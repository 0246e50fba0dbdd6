"""One run directory read into what a report shows: info, summary, steps, findings, costs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.journal.fold import Step, fold
from agent.journal.integrity import check_run
from agent.journal.store import RunInfo, read_run_info
from agent.journal.summary import Summary
from agent.models.pricing import Price, PriceTable, cost_usd, find_price, named_price
from core.errors import HarnessError
from core.types import Message
from evals.reports.detectors import detect
from evals.reports.finding import Finding
from evals.reports.forks import ForkTree, fork_tree
from evals.reports.memory import MemoryUse, memory_use
from evals.reports.outcome import graded, outcome_label, success
from evals.reports.recorded import Recorded, priceable, recorded


@dataclass
class RunData:
    dir: Path
    info: RunInfo
    summary: Summary
    opening: list[Message]  # system prompt and task, before the first step
    steps: list[Step]
    findings: list[Finding]
    price: Price | None
    step_costs: list[float | None]  # one per step, in USD; None when the model's price is unknown
    journal_notes: list[
        str
    ]  # what is wrong with the journal or summary.json, one sentence each (agent.journal.integrity)
    recorded: Recorded | None = None  # an imported run: the source's own figures (evals.reports.recorded)
    memory: MemoryUse | None = None  # what the run read and wrote of the agent's memory (evals.reports.memory)
    forks: ForkTree | None = None  # its parent and branch, and forks made of it (evals.reports.forks)

    @property
    def cost(self) -> float | None:
        """The run priced from the price table (ours); an imported run's own cost is `recorded.cost_usd`. None
        when the table has no price, or some reply has no usage to price (an import's unrecorded usage)."""
        if self.price is None or any(c is None for c in self.step_costs):
            return None
        return sum(c or 0.0 for c in self.step_costs)

    @property
    def verdict(self) -> bool | None:
        """Whether it succeeded; None for an imported run no grader judged."""
        return success(self.summary, bool(self.info.imported))

    @property
    def outcome(self) -> str:
        return outcome_label(self.summary, bool(self.info.imported))

    @property
    def counted_tokens(self) -> int:
        """The prompt tokens by the harness's own count, the base of the ideal prefix reuse."""
        return sum(s.counted_tokens or 0 for s in self.steps)

    @property
    def prefix_reused(self) -> int:
        return sum(s.prefix_reused or 0 for s in self.steps)


def is_run_dir(path: Path) -> bool:
    return (path / "run.json").is_file() and (path / "events.jsonl").is_file()


def run_dirs_in(batch: Path) -> list[Path]:
    return sorted(p for p in batch.iterdir() if p.is_dir() and is_run_dir(p))


def price_of(info: RunInfo, steps: list[Step], prices: PriceTable, price_model: str | None) -> Price | None:
    """An explicit `price_model` wins; else the run's model string; else the model a reply names."""
    if price_model:
        return named_price(price_model, prices)
    found = find_price(info.model, prices)
    for step in steps:
        if found is not None:
            break
        if step.reply is not None and step.reply.model:
            found = find_price(step.reply.model, prices)
    return found


def step_cost(price: Price | None, step: Step) -> float | None:
    """The step's model call, its failed attempts the provider billed, and the summariser calls of its overflow
    recoveries and of the compaction after it."""
    if price is None:
        return None
    billed = [f.usage for f in step.failures if f.usage is not None]
    folds = [c.summariser_usage for c in step.compactions] + [o.summariser_usage for o in step.overflows]
    usages = [step.usage, *billed, *folds]
    return sum(cost_usd(price, u) for u in usages)


def load_run(run_dir: Path, prices: PriceTable, price_model: str | None = None) -> RunData:
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise HarnessError(f"{run_dir} is not a run directory: it needs run.json and events.jsonl.")
    info = read_run_info(run_dir)
    check = check_run(run_dir, info)
    folded = fold(check.events)
    opening, steps = folded.opening, folded.steps
    price = price_of(info, steps, prices, price_model)
    costs = [step_cost(price, s) if priceable(info, s) else None for s in steps]
    summary = graded(run_dir, check.summary)
    return RunData(
        dir=run_dir,
        info=info,
        summary=summary,
        opening=opening,
        steps=steps,
        findings=detect(steps),
        price=price,
        step_costs=costs,
        journal_notes=check.notes,
        recorded=recorded(info, summary, steps),
        memory=memory_use(run_dir, info),
        forks=fork_tree(run_dir, info, check.events, steps),
    )
