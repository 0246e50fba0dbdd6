"""The chess task of the loop-shaped suite: from a fixed position, score every legal capture with
evaluate_move and play the best one. The game ends after that move (one ply), and the task is solved when the
move played is the capture the engine scores best, at the same depth as the tool."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import chess
import chess.pgn

from agent.journal.store import write_json_atomic
from agent.models.base import ModelClient
from agent.session import SandboxSpec
from core.policy import HarnessPolicy
from evals.chess.analysis import Evaluator
from evals.chess.game import GameRules
from evals.chess.runner import GameRun, play_game

NAME = "captures"
FEN = "r5k1/p4ppp/1p2p3/1p1q4/4P3/2N5/PP3PPP/R2QR1K1 w - - 0 1"  # white: four captures, one best by far
COLOR = "white"
DEPTH = 10
RULES = GameRules(max_plies=1, max_replies=6, allow_resign=False, evaluation_depth=DEPTH)
PROMPT = "Score every legal capture in this position with evaluate_move, then play the one with the best score."


def play(
    model: ModelClient,
    policy: HarnessPolicy,
    out: Path,
    sandbox: SandboxSpec,
    seed: int = 0,
    prices: Path | None = None,
) -> GameRun:
    """One run of the task; summary.json's outcome says `goal_verified` when the best capture was played."""
    game = play_game(
        model,
        "stockfish:skill=0",
        COLOR,
        policy,
        out,
        seed,
        RULES,
        None,
        FEN,
        prices=prices,
        sandbox=sandbox,
        prompt=PROMPT,
        task_id=NAME,
    )
    outcome = {**game.summary.outcome, "goal_verified": played(game.run_dir) == best_capture()}
    summary = game.summary.model_copy(update={"outcome": outcome})
    write_json_atomic(game.run_dir / "summary.json", summary.model_dump(mode="json"))
    return replace(game, summary=summary)


def best_capture() -> str:
    """The capture the engine scores best, in UCI."""
    board = chess.Board(FEN)
    evaluator = Evaluator(DEPTH)
    try:
        scores = {}
        for move in (m for m in board.legal_moves if board.is_capture(m)):
            after = board.copy()
            after.push(move)
            scores[move.uci()] = evaluator.score(after, board.turn)
    finally:
        evaluator.close()
    return max(scores, key=lambda m: scores[m])


def played(run_dir: Path) -> str | None:
    """The move the run played, in UCI; None when it played none."""
    pgn = run_dir / "artifacts" / "game.pgn"
    if not pgn.exists():
        return None
    game = chess.pgn.read_game(pgn.open())
    moves = list(game.mainline_moves()) if game is not None else []
    return moves[0].uci() if moves else None
