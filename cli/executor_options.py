"""The command-line options `harness swe` and `harness chess` share: the executor (which, and how big)
and the batch's prices and cost budget."""

from __future__ import annotations

import typer

from evals.executors.jobs import EXECUTORS, ExecutorOptions

EXECUTOR = typer.Option("local", help=f"Where items run: {' or '.join(EXECUTORS)} (a Ray cluster; see evals/RAY.md).")
RAY_ADDRESS = typer.Option(
    None,
    help="With --executor ray: a running cluster (auto, HOST:PORT, ray://HOST:PORT); "
    "by default a Ray instance is started here with --workers CPUs.",
)
TASK_CPUS = typer.Option(1.0, min=0.0, help="With --executor ray: CPUs each item's task asks for.")
TASK_MEMORY_MB = typer.Option(None, min=1, help="With --executor ray: memory (MB) each item's task asks for.")
RETRIES = typer.Option(1, min=0, help="With --executor ray: runs again of an item whose worker or node died.")
PRICES = typer.Option(
    None,
    help="A price table (TOML) instead of the one shipped with the harness: each run's calls are priced "
    "from it (and --max-cost-usd counts in it).",
)
MAX_COST_USD = typer.Option(
    None,
    min=0.0,
    help="A budget (USD) for the whole batch: no new run starts once the runs' cost, plus the expected cost "
    "of those still going, reaches it; the rest are recorded as skipped (go on with --resume and a larger "
    "budget). The model needs a price.",
)


def executor_options(
    kind: str, workers: int, address: str | None, cpus: float, memory_mb: int | None, retries: int
) -> ExecutorOptions:
    return ExecutorOptions(kind=kind, workers=workers, address=address, cpus=cpus, memory_mb=memory_mb, retries=retries)
