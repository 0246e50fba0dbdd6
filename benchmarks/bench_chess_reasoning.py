"""What resending reasoning costs in a chess game: the same game with reasoning stripped and kept.

A scripted reasoning-heavy player (every reply thinks REASONING characters) plays
Stockfish at a fixed depth, which plays the same moves every time, so both runs
play the same game and differ only in what their prompts carry. For scale: the
published llm_chess harness measured 204,027 characters of reasoning against
7,585 of board observations in one game.

    .venv/bin/python benchmarks/bench_chess_reasoning.py [--reasoning 3000] [--plies 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from core.context_policy import StripReasoning  # noqa: E402
from core.policy import HarnessPolicy  # noqa: E402
from evals.chess.game import GameRules  # noqa: E402
from evals.chess.players import RandomPlayer  # noqa: E402
from evals.chess.runner import play_game  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reasoning", type=int, default=3000, help="characters of reasoning per reply")
    ap.add_argument("--plies", type=int, default=200)
    ap.add_argument("--opponent", default="stockfish:depth=1")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    policies = {"strip (keep=none)": [StripReasoning(keep="none")], "keep all": []}
    table = Table(
        "context",
        "plies",
        "moves",
        "reasoning chars",
        "board obs chars",
        "prompt chars",
        "prompt chars / move",
        "prompt tokens / move",
        title=f"reasoning {args.reasoning} chars a reply",
    )
    with tempfile.TemporaryDirectory() as out:
        for label, context in policies.items():
            played = play_game(
                RandomPlayer(args.seed, reasoning_chars=args.reasoning),
                args.opponent,
                "white",
                HarnessPolicy(name=label, context=context),
                Path(out) / str(len(context)),
                rules=GameRules(max_plies=args.plies),
                analysis_depth=0,
            )
            r = played.record
            table.add_row(
                label,
                str(r.plies),
                str(r.moves),
                f"{r.reasoning_chars:,}",
                f"{r.board_observation_chars:,}",
                f"{r.prompt_chars:,}",
                f"{r.prompt_chars_per_move:,.0f}",
                f"{r.tokens['prompt'] / r.moves:,.0f}",
            )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
