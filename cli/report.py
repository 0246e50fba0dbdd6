"""`harness report RUN_DIR|BATCH_DIR`: write report.html (or print markdown) for a run or a batch."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from agent.journal.store import make_folder
from cli.destination import usual_or_temp
from cli.output import console, exits_on_error, text, warn
from cli.price_options import PRICE_MODEL, PRICE_TABLE, price_table
from core.errors import HarnessError
from evals.reports.batch import render_batch
from evals.reports.html import render_run
from evals.reports.load import is_run_dir, load_run, run_dirs_in
from evals.reports.localization import read_rankings
from evals.reports.text import batch_markdown, run_markdown


class Format(str, Enum):
    html = "html"
    md = "md"


@exits_on_error
def report_command(
    path: Path = typer.Argument(..., help="A run directory, or a batch directory (a folder of run directories)."),
    format: Format = typer.Option(
        Format.html, "--format", "-f", help="html writes report.html; md prints a markdown summary."
    ),
    out: Path = typer.Option(
        None,
        help="Folder that receives report.html, created if missing (default: PATH itself, or a temporary folder "
        "when PATH cannot be written).",
    ),
    prices: Path = PRICE_TABLE,
    price_model: str = PRICE_MODEL,
    rankings: Path = typer.Option(
        None,
        help="SWE runs: the outcomes `harness localize --issues ... --out FILE` wrote; localization is then measured "
        "against each instance's gold files, and whether search_code on the issue alone had one in its top 5 is "
        "shown (without it: against each run's own final patch).",
    ),
) -> None:
    """Inspect a run or a batch: detector findings, timeline, prompt breakdown, token, cache and cost charts."""
    ranked = read_rankings(rankings) if rankings is not None else None
    table = price_table(prices, price_model)
    runs = _load(path, table, price_model)
    for run in runs:
        for note in run.journal_notes:
            warn(str(run.dir), note)
    batch = not is_run_dir(path)
    if format is Format.md:
        print(batch_markdown(runs, path.name, ranked) if batch else run_markdown(runs[0]), end="")
        return
    if out is not None:
        folder = make_folder(out, "report folder", exist_ok=True)
    else:  # each run's report goes into its run directory, the batch's into the batch folder: all must be writable
        needs = [p for d in [path, *(r.dir for r in runs if batch)] for p in (d, d / "report.html")]
        folder = usual_or_temp(path, needs, "harness-report-", "report")
    target = folder / "report.html"
    written = render_batch(path, runs, target, ranked) if batch else render_run(runs[0], target, ranked)
    console.print(text(f"wrote {written}"), soft_wrap=True)


def _load(path: Path, table, price_model: str | None):
    if not path.is_dir():
        raise HarnessError(f"{path} is not a directory. Pass a run directory (with run.json) or a folder of them.")
    if is_run_dir(path):
        return [load_run(path, table, price_model)]
    dirs = run_dirs_in(path)
    if not dirs:
        raise HarnessError(f"{path} holds no run directories (folders with run.json and events.jsonl).")
    return [load_run(d, table, price_model) for d in dirs]
