"""Move quality from Stockfish, and the batch aggregate's formulas."""

from __future__ import annotations

from types import SimpleNamespace

import chess
import pytest

from evals.chess.analysis import analyse_game, classify, win_probability
from evals.chess.batch import aggregate, game_colors, score
from evals.chess.game import ascii_board, material, parse_move


def test_win_probability_and_the_classes_of_a_drop():
    assert win_probability(0) == 0.5
    assert win_probability(300) == pytest.approx(1 - win_probability(-300))
    assert win_probability(1000) > 0.97
    assert [classify(d) for d in (0.01, 0.05, 0.12, 0.3)] == [None, "inaccuracy", "mistake", "blunder"]


def test_a_hung_queen_is_a_blunder_and_a_book_move_is_not():
    # 1. e4 e5 2. Qg4 d5 3. Qxd7+?? Bxd7: white's queen takes a defended pawn and is lost.
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "d1g4", "d7d5", "g4d7", "c8d7")]
    q = analyse_game(chess.STARTING_FEN, moves, chess.WHITE, depth=8)
    assert q.analysed_moves == 3 and q.blunders >= 1 and q.avg_cp_loss > 200
    calm = analyse_game(chess.STARTING_FEN, moves[:2], chess.WHITE, depth=8)
    assert calm.analysed_moves == 1 and calm.blunders == calm.mistakes == 0


def test_moves_parse_as_uci_or_san_and_reject_the_null_move():
    board = chess.Board()
    assert parse_move(board, "e2e4") == parse_move(board, "e4") == parse_move(board, " E2E4 ")
    assert parse_move(board, "Nf3") == chess.Move.from_uci("g1f3")
    with pytest.raises(chess.InvalidMoveError):
        parse_move(board, "0000")
    with pytest.raises(chess.IllegalMoveError):
        parse_move(board, "e2e5")


def test_material_and_the_board_drawn_from_either_side():
    board = chess.Board()
    assert material(board) == {"white": 39, "black": 39}
    white, black = ascii_board(board, chess.WHITE).splitlines(), ascii_board(board, chess.BLACK).splitlines()
    assert white[1] == "8 r n b q k b n r 8" and white[0] == "  a b c d e f g h"
    assert black[1] == "1 R N B K Q B N R 1" and black[0] == "  h g f e d c b a"


def two(results):
    """Stand-ins for game records: the score reads only each game's result."""
    return [SimpleNamespace(player_result=r) for r in results]


def test_intervals_and_colours():
    # Wilson for 1 of 2 and for 0 of 2: never a zero-width interval after two games
    assert (score(two(("win", "loss"))).low, score(two(("win", "loss"))).high) == pytest.approx(
        (0.0945, 0.9055), abs=1e-4
    )
    lost = score(two(("loss", "loss")))
    assert lost.value == 0.0 and lost.low == 0.0 and lost.high == pytest.approx(0.6576, abs=1e-4)
    assert score([]).value is None
    assert game_colors("alternate", 3, 0) == ["white", "black", "white"]
    assert game_colors("random", 20, 1) == game_colors("random", 20, 1)
    assert set(game_colors("random", 20, 1)) == {"white", "black"}
    assert aggregate([]).games == 0
