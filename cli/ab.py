"""`harness ab A_DIR B_DIR`: compare two batches of runs of the same tasks under two policies."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

from cli.destination import usual_or_temp
from cli.output import console, exits_on_error, text, warn
from cli.price_options import PRICE_MODEL, PRICE_TABLE, price_table
from evals.ab.chess_elo import elo_line
from evals.ab.compare import DEFAULT_PRIMARY, METRIC_NAMES, compare
from evals.ab.html import cell, render
from evals.ab.records import load_batch
from evals.ab.results import amount, interval_text


@exits_on_error
def ab_command(
    a_dir: Path = typer.Argument(
        ..., help="Batch A (the baseline): a folder of run directories, or a folder of such batch folders."
    ),
    b_dir: Path = typer.Argument(
        ..., help="Batch B (the change): a folder of run directories, or a folder of such batch folders."
    ),
    out: Path = typer.Option(
        None,
        help="Parent folder: a new folder ab-A-vs-B is created inside it for ab.html and "
        "ab.json, and its path printed (default: the folder that holds batch B; a temporary folder when that "
        "cannot be written).",
    ),
    prices: Path = PRICE_TABLE,
    price_model: str = PRICE_MODEL,
    resamples: int = typer.Option(10_000, min=100, help="Bootstrap resamples."),
    seed: int = typer.Option(0, help="Seed of the bootstrap, so the intervals are reproducible."),
    alpha: float = typer.Option(
        0.05, min=0.0001, max=0.5, help="Significance level (the secondary metrics' after a Holm correction)."
    ),
    primary: str = typer.Option(
        DEFAULT_PRIMARY,
        help="The metric the comparison is about, judged without correction: one of "
        f"{', '.join(METRIC_NAMES)}; or pass@K or pass^K (e.g. pass@3), per task over several runs of each "
        "(seeds, or a folder of several batches of the same tasks).",
    ),
) -> None:
    """Pair runs by task (and seed) and say whether B differs from A: outcome, steps, tokens, cost, wall time."""
    table = price_table(prices, price_model)
    a, b = load_batch(a_dir, table, price_model), load_batch(b_dir, table, price_model)
    for record in [*a, *b]:
        for note in record.journal_notes:
            warn(record.run_id, note)
    c = compare(a, b, a_dir.name, b_dir.name, primary=primary, resamples=resamples, seed=seed, alpha=alpha)
    name = f"ab-{a_dir.name}-vs-{b_dir.name}"
    parent = out or usual_or_temp(b_dir.parent, [b_dir.parent / name], "harness-ab-", "comparison")
    html_path, json_path = render(c, parent / name)
    console.print(text(f"A = {a_dir.name}\nB = {b_dir.name}"))
    summary = Table("metric", "A", "B", "B − A", f"{c.level:.0%} CI (tested)", "p (Holm)", "reading")
    for r in c.metrics:
        summary.add_row(
            r.label + (" (primary)" if r.primary else ""),
            cell(r, r.mean_a),
            cell(r, r.mean_b),
            amount(r, r.diff),
            interval_text(r, ratio=math.isfinite(r.ratio)),  # the interval of what was tested
            f"{r.p_adjusted:.2g}" if r.p_adjusted >= 0.001 else "< 0.001",
            r.direction or "—",
        )
    console.print(summary)
    said = {f"{r.run_id}: {note}" for r in [*a, *b] for note in r.journal_notes}  # warned above
    for note in c.notes:
        if note not in said:
            console.print(text(("note:", "yellow"), f" {note}"), soft_wrap=True)
    elo = elo_line(a_dir, b_dir)
    if elo is not None:
        console.print(text(elo), soft_wrap=True)
    console.print(text((c.verdict.text, "bold green" if c.verdict.distinguishable else "bold")))
    console.print(text(f"wrote {html_path} and {json_path}"))
