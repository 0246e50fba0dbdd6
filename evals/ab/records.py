"""One row per run for A/B tables: the task it ran, its outcome, and what it cost."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.journal.fold import fold
from agent.journal.integrity import check_run
from agent.journal.store import read_run_info
from agent.models.pricing import PriceTable, cost_usd, find_price, named_price
from core.errors import HarnessError
from core.types import Usage
from evals.reports.load import is_run_dir, run_dirs_in
from evals.reports.outcome import graded, submitted, success
from evals.reports.recorded import priceable, recorded


@dataclass(frozen=True)
class RunRecord:
    task_id: str
    seed: int | None
    run_id: str
    policy: str
    success: bool | None  # resolved / win / goal verified, else submitted; None: an import no grader judged
    submitted: bool
    steps: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: the model has no price in the table
    wall_s: float
    started_at: str = ""
    journal_notes: tuple[str, ...] = ()  # what is wrong with its journal or summary.json (agent.journal.integrity)
    # An imported run: the cost its source recorded (evals.reports.recorded), and who recorded it; None for ours
    recorded_cost_usd: float | None = None
    recorded_by: str = ""
    # A fork (`harness fork`): its parent's run id and the step it branched after. Forks of one task and seed made
    # at two branch points are different experiments, and pair only with their own.
    branch: tuple[str, int] | None = None


def load_record(run_dir: Path, prices: PriceTable, price_model: str | None = None) -> RunRecord:
    info = read_run_info(run_dir)
    check = check_run(run_dir, info)
    summary = graded(run_dir, check.summary)
    t = summary.tokens
    price = named_price(price_model, prices) if price_model else find_price(info.model, prices)
    steps = fold(check.events).steps if info.imported else []  # what an import recorded per reply
    source = recorded(info, summary, steps)
    if source is not None and not all(priceable(info, s) for s in steps):
        price = None  # some reply's usage was never recorded: pricing its zeros would show an unknown as zero
    return RunRecord(
        task_id=summary.task_id,
        seed=info.seed,
        run_id=info.run_id,
        policy=summary.policy,
        success=success(summary, bool(info.imported)),
        submitted=submitted(summary),
        steps=summary.steps,
        prompt_tokens=t.prompt,
        cached_tokens=t.cached,
        completion_tokens=t.completion,
        cost_usd=cost_usd(
            price,
            Usage(
                prompt_tokens=t.prompt,
                completion_tokens=t.completion,
                cached_tokens=t.cached,
                cache_write_tokens=t.cache_write,
            ),
        ),
        wall_s=summary.wall_s,
        started_at=info.started_at,
        journal_notes=tuple(check.notes),
        recorded_cost_usd=source.cost_usd if source else None,
        recorded_by=source.by if source else "",
        branch=(info.fork.parent, info.fork.at_step) if info.fork is not None else None,
    )


def load_batch(batch: Path, prices: PriceTable, price_model: str | None = None) -> list[RunRecord]:
    """The runs of a batch folder, of one run directory, or of a folder of batch folders (several batches of
    the same tasks, e.g. one `harness swe` per seed with the same --out: each task then has several runs)."""
    batch = Path(batch)
    if not batch.is_dir():
        raise HarnessError(f"{batch} is not a directory; pass a batch directory (a folder of run directories).")
    dirs = [batch] if is_run_dir(batch) else run_dirs_in(batch)
    if not dirs:
        dirs = [d for sub in sorted(p for p in batch.iterdir() if p.is_dir()) for d in run_dirs_in(sub)]
    if not dirs:
        raise HarnessError(
            f"{batch} holds no run directories (folders with run.json and events.jsonl), nor batch folders of them."
        )
    return [load_record(d, prices, price_model) for d in dirs]
