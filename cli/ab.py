"""`harness ab A_DIR B_DIR`: compare two batches of runs of the same tasks under two policies."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from core.errors import HarnessError
from evals.ab.compare import compare
from evals.ab.html import delta, render
from evals.ab.records import load_batch
from evals.pricing import load_prices

console = Console()


def ab_command(
    a_dir: Path = typer.Argument(..., help="Batch A (the baseline): a folder of run directories."),
    b_dir: Path = typer.Argument(..., help="Batch B (the change): a folder of run directories."),
    out: Path = typer.Option(None, help="Folder for ab.html and ab.json (default: ab-A-vs-B beside batch B)."),
    prices: Path = typer.Option(None, help="A price table (TOML) instead of the one shipped with the harness."),
    price_model: str = typer.Option(None, help="Price every run as this model, e.g. openai:gpt-5."),
    resamples: int = typer.Option(10_000, min=100, help="Bootstrap resamples."),
    seed: int = typer.Option(0, help="Seed of the bootstrap, so the intervals are reproducible."),
    alpha: float = typer.Option(0.05, min=0.0001, max=0.5, help="Significance level, after the Holm correction."),
) -> None:
    """Pair runs by task (and seed) and say whether B differs from A: outcome, steps, tokens, cost, wall time."""
    try:
        table = load_prices(prices)
        a, b = load_batch(a_dir, table, price_model), load_batch(b_dir, table, price_model)
    except HarnessError as e:
        console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2) from None
    c = compare(a, b, a_dir.name, b_dir.name, resamples=resamples, seed=seed, alpha=alpha)
    out = out or b_dir.parent / f"ab-{a_dir.name}-vs-{b_dir.name}"
    html_path, json_path = render(c, out)
    summary = Table("metric", "A", "B", "B − A", f"{c.level:.0%} interval", "Holm p", "reading")
    for r in c.metrics:
        summary.add_row(r.label, f"{r.mean_a:,.3g}", f"{r.mean_b:,.3g}", delta(r, r.diff),
                        f"{delta(r, r.ci_low)} to {delta(r, r.ci_high)}", f"{r.p_adjusted:.2g}", r.direction or "—")
    console.print(summary)
    console.print(("[bold green]" if c.verdict.distinguishable else "[bold]") + c.verdict.text + "[/]")
    console.print(f"wrote {html_path} and {json_path}")
