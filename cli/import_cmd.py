"""`harness import PATH...`: other harnesses' trajectories as run directories (evals/interop/imports)."""

from __future__ import annotations

from enum import Enum
from itertools import islice
from pathlib import Path

import typer

from agent.pricing import load_prices
from cli.output import console, exits_on_error, text
from cli.progress import heartbeat, progress_bar
from core.errors import HarnessError
from evals.interop.imports.batch import files_in, import_batch
from evals.interop.imports.detect import open_source, trajectories
from evals.interop.imports.write import import_run


class Format(str, Enum):
    auto = "auto"
    mini_swe_agent = "mini-swe-agent"
    swe_agent = "swe-agent"
    atif = "atif"
    inspect = "inspect"


@exits_on_error
def import_command(
    paths: list[Path] = typer.Argument(
        ..., help="Trajectory files, or folders to search for them (.json, .traj, .eval)."
    ),
    format: Format = typer.Option(
        Format.auto, "--format", "-f", help="The files' format; auto reads it from each file's content."
    ),
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: one file's run directory is created inside it; a folder or several files make a "
        "batch folder import-NAME there. Importing again into the same place keeps what is already there.",
    ),
    prices: Path = typer.Option(None, help="A price table (TOML) for run.json's price, instead of the shipped one."),
) -> None:
    """Import mini-swe-agent, SWE-agent, ATIF (Harbor) or Inspect AI trajectories as run directories, so
    `harness report`, `rerender` and `ab` work on them. run.json says where each came from and what its format
    does not carry (`imported_gaps`)."""
    table = load_prices(prices)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise HarnessError(f"{missing[0]} does not exist. Pass trajectory files or folders that hold them.")
    if len(paths) == 1 and paths[0].is_file():
        source = open_source(paths[0], format.value)
        runs = list(islice(trajectories(source), 2))
        if len(runs) == 1:
            run_dir, written = import_run(runs[0], source, out, table)
            said = "imported" if written else "already imported, kept as it is"
            console.print(text(f"{source.format}: {said}\nrun directory: {run_dir}"), soft_wrap=True)
            return
    files = files_in(paths)
    if not files:
        raise HarnessError(f"{paths[0]} holds no trajectory files (.json, .traj, .eval).")
    folder = out / f"import-{_name(paths)}"
    with progress_bar(console) as bar:
        task = bar.add_task("importing", total=len(files), note="")

        def done(path: Path, error: str | None) -> None:
            if error is not None:
                console.print(text(("skipped:", "red"), f" {error}"), soft_wrap=True)
            bar.update(task, advance=1, note=path.name)

        with heartbeat(console, lambda: f"imported {int(bar.tasks[0].completed)} of {len(files)} files"):
            outcome = import_batch(files, folder, format.value, table, done)
    kept = outcome.runs - outcome.written
    console.print(
        text(
            f"{len(files)} files: {outcome.runs} runs ({outcome.written} imported, {kept} already there), "
            f"{len(outcome.failed)} files skipped\nbatch folder: {folder}"
        ),
        soft_wrap=True,
    )
    if outcome.failed:
        raise typer.Exit(1)


def _name(paths: list[Path]) -> str:
    """The batch folder's name: the folder (or file) imported, or the folder that holds the files."""
    first = paths[0].resolve()
    name = first.name if len(paths) == 1 else first.parent.name
    return name.removesuffix(".eval").removesuffix(".json") or "trajectories"
