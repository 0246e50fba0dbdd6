"""A chess game built to be forked, and its fork: a seeded random player against a seeded opponent (`random` for
the tests, Stockfish for benchmarks/bench_fork.py), 30 plies at most, forked at step 15 under lean with another
player seed."""

from __future__ import annotations

import io
from pathlib import Path

import chess
import chess.pgn

from agent.fork import Fork, fork
from agent.journal.store import read_events
from core.events import Forked
from core.presets import PRESETS
from evals.chess.game import Game, GameRules
from evals.chess.opponents import open_opponent
from evals.chess.players import RandomPlayer
from evals.chess.runner import GameRun, chess_policy, game_rule, play_game
from evals.chess.tools import chess_tools

RULES = GameRules(max_plies=30)
AT = 15


def parent_game(root: Path, opponent: str = "random") -> GameRun:
    played = play_game(RandomPlayer(seed=0), opponent, out=root, seed=0, rules=RULES, analysis_depth=None)
    assert played.summary.steps > AT
    return played


def position_after(played: GameRun, step: int) -> str:
    """The parent's position after `step`, from its PGN: as many of its moves as its steps 1..step played."""
    moves = sum(
        e.type == "tool_observed"
        and e.step <= step
        and e.observation.tool == "make_move"
        and e.observation.status == "ok"
        for e in read_events(played.run_dir)
    )
    pgn = chess.pgn.read_game(io.StringIO((played.run_dir / played.record.pgn).read_text()))
    assert pgn is not None
    board = pgn.board()
    for move in list(pgn.mainline_moves())[: 2 * moves]:  # each of the agent's moves and the opponent's reply
        board.push(move)
    return board.fen()


def fork_game(parent: Path, out: Path, opponent: str = "random", opponent_seed: int = 0) -> tuple[Fork, str | None]:
    """The fork, and its position when its branch was journaled (None: never branched)."""
    game = Game(chess.WHITE, open_opponent(opponent, opponent_seed), RULES)
    seen: dict[str, str] = {}

    def at_branch(event) -> None:
        if isinstance(event, Forked):
            seen["fen"] = game.board.fen()

    try:
        game.open()
        made = fork(
            parent,
            AT,
            policy=chess_policy(PRESETS["lean"], RULES),
            model=RandomPlayer(seed=1),
            tools=chess_tools(game),
            stop_rules=[game_rule(game)],
            listeners=[at_branch],
            out=out,
        )
    finally:
        game.opponent.close()
    return made, seen.get("fen")
