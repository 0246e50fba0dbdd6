"""A chess game forked at step 15: the fork's position at the branch is the parent's after step 15, and it plays on
under another policy and player; an opponent that now answers otherwise is a drifted world, which stops the fork.

Seeded random players and opponents (no engine, tests/evals/chess/forking.py): a game takes a second or two.
"""

from __future__ import annotations

from agent.journal.store import read_events, read_run_info
from core.events import Forked
from tests.agent import forking
from tests.evals.chess.forking import AT, fork_game, parent_game, position_after


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
