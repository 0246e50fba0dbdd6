"""`harness fork RUN --at-step N`: a run that begins with another's first N steps and goes on its own way."""

from __future__ import annotations

from pathlib import Path

import typer

from agent.fork import Fork, family, fork
from agent.journal.store import read_run_info
from agent.recovery.branch import BEFORE_FIRST_COMPACTION
from agent.run.stopping import FAILED
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, stops_on_signal, text
from cli.progress import following_run, summary_table
from core.errors import HarnessError
from core.presets import load_policy


def seeds_of(raw: str | None) -> list[int | None]:
    """`0..19`, `0,3,7` or `5`; None: the parent's seed."""
    if raw is None:
        return [None]
    try:
        if ".." in raw:
            first, last = (int(x) for x in raw.split(".."))
            if last < first:
                raise ValueError
            return list(range(first, last + 1))
        return [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise HarnessError(f"--seeds takes FIRST..LAST (0..19) or numbers separated by commas, not {raw!r}.") from None


@exits_on_error
@stops_on_signal
def fork_command(
    run_dir: Path = typer.Argument(..., help="The run directory to fork: a finished run, or one whose process died."),
    at_step: str = typer.Option(
        ...,
        "--at-step",
        help=f"The fork begins with the run's steps 1..N and goes on from there: N, or {BEFORE_FIRST_COMPACTION} "
        "(the last step before the run's first fold).",
    ),
    policy: list[str] = typer.Option(
        None, help="The fork's policy: a preset or a policy file (default: the run's); repeat for a family."
    ),
    model: str = typer.Option(None, help="The fork's model string (default: the run's)."),
    seed: int = typer.Option(None, help="The fork's model seed (default: the run's)."),
    seeds: str = typer.Option(None, help="A family: one fork per seed and policy, FIRST..LAST (0..19) or 0,3,7."),
    out: Path = typer.Option(
        None,
        help="Parent folder of the fork's run directory (default: the folder that holds RUN); for a family, the "
        "folder that receives one batch folder per policy (default: RUN-forks-at-N beside RUN).",
    ),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Fork a run at a step: a new run whose journal begins with the run's steps 1..N, whose sandbox holds the
    run's world after step N, and which goes on live under another policy, model or seed.

    The world is rebuilt the cheapest exact way: a Docker run's newest checkpoint kept for forks at or before step
    N (`checkpoint.fork_every`), else the task's image, files and setup, then every write the run journaled after
    that, run again and checked against what it gave then. Where a write gives something else, the world has
    drifted: the fork stops (`world_diverged`) with the step, the call and the difference, and exits 1. A step
    the run has not finished, a damaged journal or a run still running is refused (exit 2) and nothing is made.
    Several --policy or --seeds make a family, one batch folder per policy, which `harness ab` compares in pairs
    (forks of the same run at the same step and seed). A fork killed at any moment is finished by `harness resume`.
    """
    use_otel(otel_endpoint)
    if seed is not None and seeds is not None:
        raise HarnessError("Give --seed for one fork or --seeds for a family, not both.")
    policies = [load_policy(p) for p in policy or []] or [None]
    chosen = seeds_of(seeds) if seeds is not None else [seed]
    if len(policies) == 1 and len(chosen) == 1:
        with following_run(console) as state:
            made = fork(run_dir, at_step, policies[0], model, chosen[0], out, listeners=(state,))
        said(made)
        if made.summary is not None and made.summary.stop_reason in FAILED:
            raise typer.Exit(1)
        return
    info = read_run_info(run_dir)
    folder = out or run_dir.resolve().parent / f"{info.run_id}-forks-at-{at_step}"
    made_all = family(run_dir, at_step, policies, chosen, folder, model, done=lambda m: line(m))
    names = sorted({m.run_dir.parent.name for m in made_all})
    console.print(text(f"{len(made_all)} forks in {folder}"), soft_wrap=True)
    if len(names) > 1:
        console.print(text(f"compare: harness ab {folder / names[0]} {folder / names[1]}"), soft_wrap=True)
    if any(m.summary is None or m.summary.stop_reason in FAILED for m in made_all):
        raise typer.Exit(1)


def said(made: Fork) -> None:
    for note in made.notes:
        console.print(text(("note:", "yellow"), f" {note}"), soft_wrap=True)
    if made.summary is not None:
        console.print(summary_table(made.summary))
        diff = made.summary.outcome.get("diff")
        if made.summary.stop_reason == "world_diverged" and diff:
            console.print(text((made.run_dir / diff).read_text()), end="")
    console.print(text(f"fork: {made.run_dir}"), soft_wrap=True)


def line(made: Fork) -> None:
    stop = made.summary.stop_reason if made.summary is not None else "not run"
    steps = made.summary.steps if made.summary is not None else 0
    console.print(text(f"  {made.run_dir.parent.name}/{made.run_dir.name}: {stop} after step {steps}"), soft_wrap=True)
