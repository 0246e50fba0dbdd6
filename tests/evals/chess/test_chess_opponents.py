"""Opponent specs and the real Stockfish at the strengths they name."""

from __future__ import annotations

import chess
import pytest

from core.errors import HarnessError
from evals.chess.opponents import RandomOpponent, StockfishSpec, check_spec, open_opponent, parse_stockfish


def test_specs_parse_into_engine_options_and_limits():
    assert parse_stockfish("stockfish:skill=0").options() == {"Threads": 1}
    assert parse_stockfish("stockfish:skill=0").level() == 0.0 and parse_stockfish("stockfish").level() == 20.0
    spec = parse_stockfish("stockfish:elo=1400,depth=5")
    assert 0.0 < spec.level() < 1.0 and 18.0 < parse_stockfish("stockfish:elo=2850").level() < 20.0
    assert spec.limit().depth == 5 and spec.limit().time is None
    assert parse_stockfish("stockfish").limit().nodes == 100_000 and parse_stockfish("stockfish").limit().time is None
    assert parse_stockfish("stockfish:nodes=500,time=0.5").limit().nodes == 500
    assert check_spec("random") == "random"


@pytest.mark.parametrize(
    "spec, says",
    [
        ("stockfish:elo=1000", "1350"),
        ("stockfish:skill=21", "20"),
        ("stockfish:depth", "key=value"),
        ("stockfish:speed=3", "Known keys"),
        ("gnuchess", "Unknown opponent"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec, says):
    with pytest.raises(HarnessError, match=says):
        check_spec(spec)


def test_a_missing_binary_is_a_clear_error():
    with pytest.raises(HarnessError, match="Stockfish is not at"):
        open_opponent("stockfish:path=/nonexistent/stockfish", 0)


@pytest.mark.parametrize("spec", ["stockfish:skill=0,depth=1", "stockfish:elo=1350,nodes=200", "random"])
def test_each_opponent_plays_legal_moves(spec):
    opponent = open_opponent(spec, seed=0)
    try:
        board = chess.Board()
        for _ in range(6):
            move = opponent.choose(board)
            assert move in board.legal_moves
            board.push(move)
    finally:
        opponent.close()


def test_the_random_mover_repeats_for_a_seed():
    def game(seed):
        a, board = RandomOpponent(seed), chess.Board()
        for _ in range(10):
            board.push(a.choose(board))
        return board.fen()

    assert game(7) == game(7) and game(7) != game(8)


def test_full_strength_stockfish_with_a_depth_limit_repeats():
    spec = StockfishSpec(depth=6)
    assert spec.options() == {"Threads": 1}

    def first_moves():
        sf, board = open_opponent("stockfish:depth=6", 0), chess.Board()
        try:
            for _ in range(4):
                board.push(sf.choose(board))
        finally:
            sf.close()
        return board.move_stack

    assert first_moves() == first_moves()


@pytest.mark.parametrize("spec", ["stockfish:skill=0", "stockfish:elo=1500", "stockfish:nodes=3000"])
def test_every_stockfish_opponent_repeats_its_game_for_a_seed(spec):
    """The weakened Stockfish is seeded by the harness, so an A/B pair with one seed plays one game."""

    def game(seed):
        sf, board = open_opponent(spec, seed), chess.Board()
        try:
            for _ in range(12):
                board.push(sf.choose(board))
        finally:
            sf.close()
        return [m.uci() for m in board.move_stack]

    first = game(3)
    assert first == game(3)
    if "nodes" not in spec:  # a weakened engine picks other moves under another seed
        assert any(game(s) != first for s in (4, 5, 6))
