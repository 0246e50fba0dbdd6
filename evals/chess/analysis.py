"""Move quality from Stockfish: centipawn loss and win-probability drops of the agent's moves.

For each of the agent's moves the position is evaluated before (best play) and
after (the move played), from the agent's side. Centipawns are capped at ±1000
and mates count as the cap, as Lichess does. A move is an inaccuracy, mistake or
blunder when it drops the agent's win probability by at least 5, 10 or 15
points (Lichess's 0.1/0.2/0.3 on its −1..1 "winning chances" scale).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import chess
import chess.engine
from pydantic import BaseModel

from evals.chess.opponents import STOCKFISH

CP_CAP = 1000
INACCURACY, MISTAKE, BLUNDER = 0.05, 0.10, 0.15


class MoveLoss(BaseModel):
    """One of the agent's moves: its ply (1 is White's first move), and what it cost."""

    ply: int
    cp_loss: int
    kind: str | None  # inaccuracy, mistake, blunder, or None


class MoveQuality(BaseModel):
    depth: int
    analysed_moves: int
    avg_cp_loss: float | None
    inaccuracies: int
    mistakes: int
    blunders: int
    moves: list[MoveLoss] = []  # the agent's moves in order (empty in records written before it was kept)


def win_probability(cp: int) -> float:
    """Lichess's logistic fit from centipawns to the side's chance of winning."""
    return 1 / (1 + math.exp(-0.00368208 * cp))


def classify(drop: float) -> str | None:
    if drop >= BLUNDER:
        return "blunder"
    if drop >= MISTAKE:
        return "mistake"
    if drop >= INACCURACY:
        return "inaccuracy"
    return None


def analyse_game(
    start_fen: str, moves: Sequence[chess.Move], player: chess.Color, depth: int, engine_path: str = STOCKFISH
) -> MoveQuality:
    board = chess.Board(start_fen)
    losses: list[MoveLoss] = []
    kinds = {"inaccuracy": 0, "mistake": 0, "blunder": 0}
    with chess.engine.SimpleEngine.popen_uci(engine_path) as engine:
        engine.configure({"Threads": 1})  # one thread: the same depth gives the same numbers
        for move in moves:
            if board.turn != player:
                board.push(move)
                continue
            ply = board.ply() + 1
            before = _evaluate(engine, board, player, depth)
            board.push(move)
            after = _evaluate(engine, board, player, depth)
            kind = classify(win_probability(before) - win_probability(after))
            losses.append(MoveLoss(ply=ply, cp_loss=max(0, before - after), kind=kind))
            if kind is not None:
                kinds[kind] += 1
    return MoveQuality(
        depth=depth,
        analysed_moves=len(losses),
        avg_cp_loss=round(sum(m.cp_loss for m in losses) / len(losses), 1) if losses else None,
        inaccuracies=kinds["inaccuracy"],
        mistakes=kinds["mistake"],
        blunders=kinds["blunder"],
        moves=losses,
    )


def _evaluate(
    engine: chess.engine.SimpleEngine, board: chess.Board, pov: chess.Color, depth: int, game: object = None
) -> int:
    """Centipawns from `pov`'s side, capped; `game`: a new object clears the engine's hash first (ucinewgame), so
    the score does not depend on what was analysed before."""
    outcome = board.outcome()
    if outcome is not None:  # a finished game needs no engine, and engines disagree on how to score one
        return 0 if outcome.winner is None else (CP_CAP if outcome.winner == pov else -CP_CAP)
    score = engine.analyse(board, chess.engine.Limit(depth=depth), game=game)["score"].pov(pov)
    return max(-CP_CAP, min(CP_CAP, score.score(mate_score=100 * CP_CAP)))


class Evaluator:
    """Stockfish at a fixed depth on one thread, each position from a cleared hash: the same position always
    gets the same score. Whoever makes one closes it."""

    def __init__(self, depth: int, engine_path: str = STOCKFISH):
        self.depth = depth
        self.engine = chess.engine.SimpleEngine.popen_uci(engine_path)
        self.engine.configure({"Threads": 1})

    def score(self, board: chess.Board, pov: chess.Color) -> int:
        return _evaluate(self.engine, board, pov, self.depth, game=object())

    def close(self) -> None:
        self.engine.quit()
