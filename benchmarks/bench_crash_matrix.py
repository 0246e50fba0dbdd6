"""kill -9 (and SIGTERM, SIGINT) at random moments, resume, and replay, for every sandbox × context policy × kind of write.

For each cell of {local, docker} × {append-only, compacting with a scripted summariser} ×
{shell writes, write_file, a stdio MCP server's write tool}, and local/overflowing/shell (a 4,000-token
window: emergency folds and cuts every step or two) (tests/agent/recovery/crash_driver.py): one
uninterrupted run, then KILLS SIGKILLs at moments drawn uniformly over that run's duration (in the
overflowing cell two kills in three are aimed instead: right after an emergency fold's summary, or
right after a recovery, before its step's model call; in the fork cells one kill in three is aimed inside
the fork's branch, once it has run its parent's first or second write again, and one in the fork's own
steps), each killed run resumed (`harness resume` semantics) until it finishes. Per cell it prints the kills that landed inside a write and inside a
fold or recovery, the runs that differ from the uninterrupted one (counter, conversation, every
prompt byte for byte, folds and recoveries as replay compares them, stop), duplicated writes, lost
steps, containers left behind once every run finished, and the median resume time (from the resume
call to its run_resumed event: state rebuilt, sandbox reconnected, MCP servers connected). In a cell
named .../TERM or .../INT the processes get SIGTERM or SIGINT instead of SIGKILL (every other one
as a write's intent is journaled, so that the resume settles a call the stop cut short): each stops at its
next safe point with its stop, snapshot and summary written (core/interrupts.py), exits 143 or 130,
and is resumed the same way. In a cell named .../slow-model the model waits a quarter of a second before each
reply, and one process in two is stopped halfway through that wait (kills in a model call: replies asked for
again). The later cells (crash_driver.LATER_CELLS) add forks of a code-mode run and of a run that kept memory, a
task made from an MCP prompt with a placed and followed resource, and the code tools with a repository map. Every
finished run that was resumed is then replayed (`harness replay`: each of its processes' lives in turn, the
recovery included) and its harness divergences counted.
Goal: 0, 0, 0, 0, 0 in every cell. Exits 1 when a cell misses it.

    .venv/bin/python benchmarks/bench_crash_matrix.py [--kills 20] [--steps 6] [--seed N] [--only local/overflowing/shell]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.agent.recovery import crash_driver  # noqa: E402
from tests.agent.recovery.crash_driver import CELLS, Cell  # noqa: E402


def measure(cell: Cell, root: Path, kills: int, steps: int, seed: int) -> tuple[list, list[str]]:
    reference, took = crash_driver.run_once(cell, root / "reference", steps)
    start = time.perf_counter()
    stats = crash_driver.torture(root / "killed", cell, kills, steps, seed, window_s=took)
    wall = time.perf_counter() - start
    bad = {r: p for r in stats.runs if (p := crash_driver.problems(r, reference))}
    left = crash_driver.containers_left(root) if cell.sandbox == "docker" else 0
    replayed = [crash_driver.replay_divergences(r, root / "replays") for r in stats.runs]
    diverged = [r for r, n in zip(stats.runs, replayed, strict=True) if n]
    resume_ms = f"{statistics.median(stats.resume_s) * 1000:.0f}" if stats.resume_s else "-"
    inside = sum(crash_driver.kills_inside_tools(r) for r in stats.runs)
    row = [
        cell.name,
        stats.kills,
        len(stats.runs),
        inside,
        sum(
            crash_driver.kills_in_recoveries(r) + crash_driver.kills_in_branches(r) + crash_driver.kills_in_openings(r)
            for r in stats.runs
        ),
        sum(crash_driver.kills_after_branches(r) for r in stats.runs) if cell.fork else "-",
        sum(crash_driver.kills_in_model_calls(r) for r in stats.runs),
        f"{len(bad)}",
        sum(crash_driver.duplicated(r) for r in stats.runs),
        sum(crash_driver.lost(r, reference) for r in stats.runs),
        left,
        sum(n is not None for n in replayed),
        sum(n or 0 for n in replayed),
        resume_ms,
        f"{took:.1f}",
        f"{wall:.0f}",
    ]
    return row, [f"  {r}: {'; '.join(p)}" for r, p in bad.items()] + [f"  {r}: replay diverges" for r in diverged]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="per cell")
    parser.add_argument("--steps", type=int, default=6, help="counter writes per run (then a read and submit)")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument(
        "--only",
        action="append",
        type=Cell.parse,
        help="a cell such as local/compacting/mcp or docker/append-only/shell/TERM (repeatable)",
    )
    args = parser.parse_args()
    header = [
        "cell",
        "kills",
        "runs",
        "kills in a write",
        "kills in a fold, recovery, fork's branch or run's opening",
        "kills in a fork's own steps",
        "kills in a model call",
        "runs that differ",
        "duplicated writes",
        "lost steps",
        "containers left",
        "resumed runs replayed",
        "replay divergences",
        "resume ms (median)",
        "uninterrupted s",
        "cell s",
    ]
    print(
        f"seed {args.seed}, {args.kills} kills per cell, {args.steps} writes per run; load average {os.getloadavg()[0]:.1f}"
    )
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header), flush=True)
    missed, details = [], []
    for cell in args.only or CELLS:
        tmp = Path(tempfile.mkdtemp(prefix="crash-matrix-"))
        row, found = measure(cell, tmp, args.kills, args.steps, args.seed)
        print("| " + " | ".join(map(str, row)) + " |", flush=True)
        details += found
        if any(str(row[i]) != "0" for i in (7, 8, 9, 10, 12)):  # differ, duplicated, lost, containers, divergences
            missed.append(f"{cell.name} (its runs are kept in {tmp})")
        else:
            shutil.rmtree(tmp)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if missed:
        print(f"cells that miss 0/0/0/0/0: {', '.join(missed)}", *details, sep="\n")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
