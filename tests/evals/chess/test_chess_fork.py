"""A chess game forked at step 15: the fork's position at the branch is the parent's after step 15, and it plays on
under another policy and player; an opponent that now answers otherwise is a drifted world, which stops the fork.

Seeded random players and opponents (no engine): a game of about 30 steps takes a second or two.
"""

from __future__ import annotations

import io
from pathlib import Path

import chess
import chess.pgn

from agent.fork import fork
from agent.journal.store import read_events, read_run_info
from core.events import Forked
from core.policy import PRESETS
from evals.chess.game import Game, GameRules
from evals.chess.opponents import RandomOpponent
from evals.chess.players import RandomPlayer
from evals.chess.runner import chess_policy, game_rule, play_game
from evals.chess.tools import chess_tools
from tests.agent import forking

RULES = GameRules(max_plies=30)
AT = 15


def parent_game(root: Path):
    played = play_game(RandomPlayer(seed=0), "random", out=root, seed=0, rules=RULES, analysis_depth=None)
    assert played.summary.steps > AT
    return played


def position_after(played, step: int) -> str:
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


def fork_game(parent: Path, out: Path, opponent_seed: int):
    game = Game(chess.WHITE, RandomOpponent(opponent_seed), RULES)
    game.open()
    seen: dict[str, str] = {}

    def at_branch(event) -> None:
        if isinstance(event, Forked):
            seen["fen"] = game.board.fen()

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
    return made, seen.get("fen")


def test_a_chess_game_forked_at_step_15_holds_the_parents_position_and_plays_on_under_lean(tmp_path):
    parent = parent_game(tmp_path)
    made, fen = fork_game(parent.run_dir, tmp_path / "forks", opponent_seed=0)
    assert fen == position_after(parent, AT)
    assert made.summary is not None and made.summary.stop_reason == "game_over"
    assert forking.inherited_part(made.run_dir) == forking.as_inherited(read_events(parent.run_dir), AT)
    assert read_run_info(made.run_dir).policy["name"] == "lean"
    branch = next(e for e in read_events(made.run_dir) if isinstance(e, Forked))
    assert branch.world_sha256 is not None and "ply" in branch.world


def test_a_chess_fork_whose_opponent_answers_otherwise_stops_as_world_diverged(tmp_path):
    parent = parent_game(tmp_path)
    made, fen = fork_game(parent.run_dir, tmp_path / "forks", opponent_seed=7)
    assert fen is None  # never branched
    assert made.summary is not None and made.summary.stop_reason == "world_diverged"
    assert "make_move" in made.summary.message and "step " in made.summary.message
