"""Resident memory over long batches of local-model runs: it stays flat when the runs share one engine.

Two batches in this one process, each with the embedded model (`local`, its default `local` policy) on
one worker of the local executor:

  chess  N games against Stockfish at skill 0, a few plies each, no move analysis
         (as `harness chess --model local --workers 1 --max-plies P --analysis-depth 0`)
  swe    N instances of the bundled SWE suite (its ten, repeated under new ids), each run in its Docker
         sandbox for a few steps and its patch collected, not graded (as `harness swe --model local`)

After each game or instance it prints the process's resident memory (VmRSS), and at the end of each batch
the last one's against the third's (the first runs load the weights and warm the allocator).

    .venv/bin/python benchmarks/bench_batch_memory.py [--part chess|swe|both] [--games 40] [--instances 40]
                                                      [--max-plies 4] [--max-steps 3] [--max-tokens 256]

`--max-steps` caps the model's steps in each game or instance and `--max-tokens` each reply (the `local` preset's
256 by default): shorter runs make a long batch finish sooner and leave what is measured, the memory between
runs, as it is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.policy import HarnessPolicy  # noqa: E402
from core.presets import PRESETS  # noqa: E402
from evals.chess.batch import ChessBatchSpec, play_batch  # noqa: E402
from evals.chess.game import GameRules  # noqa: E402
from evals.chess.players import ModelMaker  # noqa: E402
from evals.executors import ExecutorOptions  # noqa: E402
from evals.swe.runner import SweBatchSpec, run_batch  # noqa: E402
from evals.swe.suite import load_instances, suite_path  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Follow:
    """Prints the resident memory after each item of a batch, and the last against the third at the end."""

    def __init__(self, what: str):
        self.what, self.rss, self.t0 = what, [], time.perf_counter()

    def __call__(self, label: str) -> None:
        self.rss.append(rss_mb())
        grown = self.rss[-1] - self.rss[-2] if len(self.rss) > 1 else 0.0
        print(
            f"{self.what} {len(self.rss):3d} ({label}): RSS {self.rss[-1]:7.0f} MB ({grown:+6.0f}), "
            f"{time.perf_counter() - self.t0:6.0f} s",
            flush=True,
        )

    def verdict(self) -> None:
        if len(self.rss) < 3:
            print(f"{self.what}: fewer than 3 items, no ratio", flush=True)
            return
        third, last = self.rss[2], self.rss[-1]
        ratio = last / third
        print(
            f"{self.what}: RSS after item 3 {third:.0f} MB, after item {len(self.rss)} {last:.0f} MB: "
            f"last/third {ratio:.3f} ({'within' if abs(ratio - 1) <= 0.10 else 'NOT within'} 10%)",
            flush=True,
        )


def local_policy(max_steps: int, max_tokens: int) -> HarnessPolicy:
    local = PRESETS["local"]
    stop = local.stop.model_copy(update={"max_steps": max_steps})
    return local.model_copy(update={"stop": stop, "model": local.model.model_copy(update={"max_tokens": max_tokens})})


def chess(games: int, max_plies: int, max_steps: int, max_tokens: int, out: Path) -> None:
    follow = Follow("game")
    spec = ChessBatchSpec(
        games=games,
        make_model=ModelMaker("local"),
        opponent="stockfish:skill=0",
        policy=local_policy(max_steps, max_tokens),
        out=out,
        rules=GameRules(max_plies=max_plies, allow_resign=False),
        analysis_depth=None,
        executor=ExecutorOptions(workers=1),
    )
    play_batch(spec, on_game=lambda i, played: follow(f"{played.record.player_result}, {played.record.plies} plies"))
    follow.verdict()


def swe(instances: int, max_steps: int, max_tokens: int, out: Path) -> None:
    suite = load_instances(suite_path("builtin"))
    chosen = [
        suite[i % len(suite)].model_copy(
            update={"instance_id": f"{suite[i % len(suite)].instance_id}-{i // len(suite)}"}
        )
        for i in range(instances)
    ]
    follow = Follow("instance")
    spec = SweBatchSpec(chosen, "local", local_policy(max_steps, max_tokens), out / "swe", ExecutorOptions(workers=1))
    run_batch(spec, on_done=lambda r: follow(f"{r.instance_id}: {r.stop_reason}, {r.steps} steps"))
    follow.verdict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["chess", "swe", "both"], default="both")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--max-plies", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=PRESETS["local"].model.max_tokens)
    args = parser.parse_args()
    print(f"RSS at start: {rss_mb():.0f} MB", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-batch-memory-") as tmp:
        if args.part in ("chess", "both"):
            chess(args.games, args.max_plies, args.max_steps, args.max_tokens, Path(tmp))
        if args.part in ("swe", "both"):
            swe(args.instances, args.max_steps, args.max_tokens, Path(tmp))


if __name__ == "__main__":
    main()
