"""The embedded model under its default policy (`local`): seconds per chess move and per agent step.

Plays chess games against the weakest Stockfish and runs the example task, each with default
settings, and prints wall seconds per move and per step, with the tokens behind them.

    .venv/bin/python benchmarks/bench_local.py [--games 1] [--max-plies 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typer.testing import CliRunner  # noqa: E402

from cli.main import EXAMPLES, app  # noqa: E402


def invoke(args: list[str]) -> float:
    start = time.perf_counter()
    result = CliRunner().invoke(app, args)
    if result.exit_code != 0:
        raise SystemExit(f"harness {' '.join(args)} failed:\n{result.output}")
    return time.perf_counter() - start


def summaries(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in folder.rglob("summary.json") if (p.parent / "run.json").exists()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--max-plies", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        chess_dir, run_dir = Path(tmp) / "chess", Path(tmp) / "run"
        chess_s = invoke(
            [
                "chess",
                "--model",
                "local",
                "--games",
                str(args.games),
                "--max-plies",
                str(args.max_plies),
                "--analysis-depth",
                "0",
                "--out",
                str(chess_dir),
            ]
        )
        run_s = invoke(["run", "--model", "local", "--task", str(EXAMPLES / "demo_task.yaml"), "--out", str(run_dir)])
        games, runs = summaries(chess_dir), summaries(run_dir)
    moves = sum(g["outcome"]["moves"] for g in games)
    steps = sum(r["steps"] for r in runs)
    completion = sum(r["tokens"]["completion"] for r in runs)
    print(f"{'job':<34}{'wall s':>9}{'units':>8}{'s / unit':>10}")
    print(
        f"{'chess, ' + str(args.games) + ' game(s), moves':<34}{chess_s:>9.1f}{moves:>8}{chess_s / max(moves, 1):>10.2f}"
    )
    print(f"{'run on demo_task.yaml, steps':<34}{run_s:>9.1f}{steps:>8}{run_s / max(steps, 1):>10.2f}")
    print(
        f"run: stop {runs[0]['stop_reason']}, {completion} completion tokens "
        f"({completion / max(steps, 1):.0f} per step); wall times include loading the model"
    )


if __name__ == "__main__":
    main()
