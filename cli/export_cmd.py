"""`harness export RUN_DIR|BATCH_DIR --format atif|inspect`: our runs in other harnesses' formats."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from cli.output import console, exits_on_error, text, warn
from evals.interop.exports.write import export


class Format(str, Enum):
    atif = "atif"
    inspect = "inspect"


@exits_on_error
def export_command(
    path: Path = typer.Argument(..., help="A run directory, or a batch folder of run directories."),
    format: Format = typer.Option(
        ...,
        "--format",
        "-f",
        help="atif: one ATIF trajectory per run, RUN.atif.json (Harbor, Docent); inspect: one Inspect AI eval "
        "log, one sample per run (`inspect view --log-dir DIR`).",
    ),
    out: Path = typer.Option(None, help="Folder the files go to, created if missing (default: PATH itself)."),
) -> None:
    """Write a run or a batch as ATIF trajectories or an Inspect AI eval log, built from each run's journal."""
    done = export(path, format.value, out)
    for note in done.notes:
        warn(note)
    for written in done.written:
        console.print(text(f"wrote {written}"), soft_wrap=True)
    for why in done.skipped:
        console.print(text(("error:", "red"), f" {why}"), soft_wrap=True)
    if done.skipped:
        raise typer.Exit(2)
