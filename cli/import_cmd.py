"""`harness import PATH...`: other harnesses' trajectories as run directories (evals/interop/imports)."""

from __future__ import annotations

import shutil
from enum import Enum
from itertools import islice
from pathlib import Path

import typer

from agent.models.pricing import load_prices
from cli.output import console, exits_on_error, stderr, text, warn
from cli.progress import following_files
from core.errors import HarnessError
from evals.interop.imports.batch import files_in, import_batch
from evals.interop.imports.detect import open_source, trajectories
from evals.interop.imports.grades import grade_run, read_grades
from evals.interop.imports.write import import_run

WARN_AT = 20


class Format(str, Enum):
    auto = "auto"
    mini_swe_agent = "mini-swe-agent"
    swe_agent = "swe-agent"
    atif = "atif"
    inspect = "inspect"
    claude_code = "claude-code"
    openhands = "openhands"


@exits_on_error
def import_command(
    paths: list[Path] = typer.Argument(
        ..., help="Trajectory files, or folders to search for them (.json, .jsonl, .traj, .eval)."
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
    grades: Path = typer.Option(
        None,
        help="A SWE-bench grading result: the harness's report JSON (resolved_ids...), a results_summary.json "
        "(instances [{instance_id, resolved}]) or a folder of per-instance report.json. Each run it grades gets a "
        "grade.json, so reports and ab judge it on resolved.",
    ),
) -> None:
    """Import mini-swe-agent, SWE-agent, ATIF (Harbor), Inspect AI, Claude Code or OpenHands trajectories as run
    directories, so `harness report`, `rerender` and `ab` work on them. run.json says where each came from and what
    its format does not carry (`imported_gaps`). In a folder, a file that is no trajectory is passed over (said on
    stderr); one that cannot be read is skipped, and the command then exits 1."""
    table = load_prices(prices)
    graded = read_grades(grades) if grades is not None else None  # a bad grades file stops before anything is written
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
            if graded is not None:
                iid = runs[0].instance_id
                verdict = grade_run(run_dir, iid, graded)
                if verdict is None:
                    _warn_each([f"{run_dir.name}: {graded.source} has no grade for {iid}; its outcome stays unknown"])
                else:
                    console.print(text(f"graded by {graded.source}: {'resolved' if verdict else 'not resolved'}"))
            return
    files = files_in(paths)
    if not files:
        raise HarnessError(f"{paths[0]} holds no trajectory files (.json, .jsonl, .traj, .eval).")
    folder = out / f"import-{_name(paths)}"
    new = not folder.exists()
    with following_files(stderr, len(files), "importing", "imported", "files", "skipped") as done:
        outcome = import_batch(
            files,
            folder,
            format.value,
            table,
            lambda path, why, failed: done(path, why, None if failed else "passed over (not a trajectory)"),
            graded,
        )
    if not outcome.runs and not outcome.failed:
        if new:
            shutil.rmtree(folder)
        raise HarnessError(f"None of the {len(files)} files under {paths[0]} is a trajectory `harness import` reads.")
    kept = outcome.runs - outcome.written
    over = f", {len(outcome.passed_over)} passed over (not trajectories)" if outcome.passed_over else ""
    console.print(
        text(
            f"{len(files)} files: {outcome.runs} runs ({outcome.written} imported, {kept} already there), "
            f"{len(outcome.failed)} files skipped{over}\nbatch folder: {folder}"
        ),
        soft_wrap=True,
    )
    if graded is not None:
        console.print(
            text(f"graded by {graded.source}: {outcome.resolved} resolved, {outcome.unresolved} not resolved"),
            soft_wrap=True,
        )
        _warn_each(
            [
                f"{run}: {graded.source} has no grade for {iid}; its outcome stays unknown"
                for run, iid in outcome.ungraded
            ]
        )
        _warn_each(
            [f"{graded.source}: {iid} names no run of this import; its grade is not used" for iid in outcome.unknown]
        )
    if outcome.failed:
        raise typer.Exit(1)


def _warn_each(lines: list[str]) -> None:
    """One warning line each, the first WARN_AT; a count for the rest (a subset imported against a whole
    benchmark's grades would otherwise print hundreds)."""
    for line in lines[:WARN_AT]:
        warn(line)
    if len(lines) > WARN_AT:
        warn(f"... and {len(lines) - WARN_AT} more like these")


def _name(paths: list[Path]) -> str:
    """The batch folder's name: the folder (or file) imported, or the folder that holds the files."""
    first = paths[0].resolve()
    name = first.name if len(paths) == 1 else first.parent.name
    return name.removesuffix(".eval").removesuffix(".jsonl").removesuffix(".json") or "trajectories"
