"""Games against the real Stockfish binary, with scripted players standing in for a model."""

from __future__ import annotations

import io
import json
from pathlib import Path

import chess
import chess.pgn
import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from core.events import ToolObserved
from core.policy import ErrorPolicy, HarnessPolicy
from evals.chess.batch import aggregate
from evals.chess.game import Game, GameRules
from evals.chess.opponents import RandomOpponent
from evals.chess.players import PlannedPlayer, RandomPlayer
from evals.chess.runner import play_game

WEAK = "stockfish:skill=0,depth=1"


def observations(run_dir: Path) -> list:
    return [e.observation for e in read_events(run_dir) if isinstance(e, ToolObserved)]


def read_pgn(run_dir: Path, record) -> chess.pgn.Game:
    game = chess.pgn.read_game(io.StringIO((run_dir / record.pgn).read_text()))
    assert game is not None and not game.errors
    return game


def test_random_player_finishes_a_game_with_a_valid_pgn(tmp_path):
    played = play_game(RandomPlayer(seed=3), WEAK, "white", out=tmp_path, analysis_depth=4)
    r = played.record
    assert played.summary.stop_reason == "game_over"
    assert r.termination in {
        "checkmate",
        "stalemate",
        "insufficient_material",
        "seventyfive_moves",
        "fivefold_repetition",
        "max_plies",
    }
    pgn = read_pgn(played.run_dir, r)
    moves = list(pgn.mainline_moves())
    assert len(moves) == r.plies and pgn.headers["Result"] == r.result
    assert pgn.headers["Termination"] == r.termination
    board = pgn.end().board()
    if r.termination == "checkmate":
        assert board.is_checkmate() and r.winner == ("white" if board.turn == chess.BLACK else "black")
    assert r.moves == (r.plies + 1) // 2 and r.wrong_moves == r.wrong_actions == 0
    assert r.tool_calls == {"get_board": r.moves, "make_move": r.moves}  # it reads the board before every move
    assert r.quality is not None and r.quality.analysed_moves == r.moves and r.quality.avg_cp_loss >= 0
    # The record is what summary.json holds as its outcome.
    summary = json.loads((played.run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "game_over" and summary["outcome"]["termination"] == r.termination
    assert summary["outcome"]["pgn"] == "artifacts/game.pgn"


def test_two_moves_in_one_reply_play_only_the_first(tmp_path):
    player = PlannedPlayer([["board"], ["move:e2e4", "move:d2d4", "board"], ["board"]])
    played = play_game(player, WEAK, "white", out=tmp_path, rules=GameRules(max_plies=4), analysis_depth=0)
    obs = observations(played.run_dir)
    first, second, third = obs[1], obs[2], obs[3]
    assert first.status == "ok" and "You played e4 (e2e4)" in first.text and "opponent replied" in first.text
    for later in (second, third):
        assert later.status == "rejected"
        assert "opponent has already replied" in later.text and "get_board" in later.text
    # The next board shows exactly one move of ours and the opponent's reply.
    board = chess.Board(next(line[5:] for line in obs[4].text.splitlines() if line.startswith("FEN: ")))
    assert board.piece_at(chess.E4) == chess.Piece(chess.PAWN, chess.WHITE)
    assert board.piece_at(chess.D2) == chess.Piece(chess.PAWN, chess.WHITE)
    assert board.ply() == 2
    r = played.record
    assert r.extra_moves_rejected == 1 and r.rejected_calls == 2
    assert list(read_pgn(played.run_dir, r).mainline_moves())[0] == chess.Move.from_uci("e2e4")


# Two white knights both reach d2, so "Nd2" is ambiguous; the white king can never step two squares.
KNIGHTS = "4k3/4p3/8/8/8/8/4P3/1N2KN2 w - - 0 1"


def test_wrong_moves_get_their_own_observation_and_spare_the_backstop(tmp_path):
    plan = [["move:Nd2"], ["move:knight to d2"], ["move:Nbd2"], ["board"], ["move:e1e3"], ["board"], ["random"]]
    # A backstop of one failure would stop the run at the first wrong move, were it counted.
    policy = HarnessPolicy(errors=ErrorPolicy(max_consecutive_failures=1))
    played = play_game(
        PlannedPlayer(plan),
        WEAK,
        "white",
        policy,
        tmp_path,
        rules=GameRules(max_plies=4),
        analysis_depth=0,
        start_fen=KNIGHTS,
    )
    obs = observations(played.run_dir)
    ambiguous, invalid, legal, _, illegal, _, last = obs
    assert ambiguous.text.startswith("Ambiguous move") and KNIGHTS.split()[0] in ambiguous.text
    assert "2 failed moves left" in ambiguous.text
    assert invalid.text.startswith("Invalid move") and "1 failed move left" in invalid.text
    assert legal.status == "ok"
    assert illegal.text.startswith("Illegal move") and "2 failed moves left" in illegal.text  # a new turn
    assert {o.error_kind for o in (ambiguous, invalid, illegal)} == {"domain"}
    assert not any(o.counts_as_failure for o in obs)
    assert last.status == "ok"
    r = played.record
    assert played.summary.stop_reason == "game_over" and r.termination == "max_plies"
    assert r.wrong_moves == 3 and r.wrong_actions == 0 and r.moves == 2


def test_three_wrong_moves_in_a_turn_forfeit_the_game(tmp_path):
    plan = [["move:e2e5"], ["move:e2e5"], ["move:e2e5"]]
    played = play_game(PlannedPlayer(plan), WEAK, "white", out=tmp_path, analysis_depth=0)
    r = played.record
    assert played.summary.stop_reason == "game_over" and played.summary.steps == 3
    assert r.termination == "forfeit_wrong_moves" and r.winner == "black" and r.result == "0-1"
    assert "forfeits" in observations(played.run_dir)[-1].text
    assert read_pgn(played.run_dir, r).headers["Result"] == "0-1"


def test_a_player_that_never_calls_a_tool_forfeits_after_the_reply_limit(tmp_path):
    player = PlannedPlayer([], then="silent")
    played = play_game(player, WEAK, "black", out=tmp_path, analysis_depth=0)
    r = played.record
    assert played.summary.stop_reason == "game_over" and played.summary.steps == 10
    assert r.termination == "forfeit_replies" and r.winner == "white" and r.player_result == "loss"
    assert r.wrong_actions == 10 and r.plies == 1  # the opponent opened as white


def test_unreadable_calls_are_wrong_actions_and_a_legal_move_resets_the_backstop(tmp_path):
    # Unreadable calls do count toward the backstop (two in a row would stop the run here);
    # the legal move between them resets it.
    plan = [["bad_json"], ["move:e2e4"], ["unknown_tool"], ["board"], ["random"]]
    policy = HarnessPolicy(errors=ErrorPolicy(max_consecutive_failures=2))
    played = play_game(
        PlannedPlayer(plan), WEAK, "white", policy, tmp_path, rules=GameRules(max_plies=4), analysis_depth=0
    )
    r = played.record
    assert played.summary.stop_reason == "game_over" and r.termination == "max_plies"
    assert r.wrong_actions == 2 and r.wrong_moves == 0 and r.moves == 2


def test_playing_black_starts_after_the_opponents_opening(tmp_path):
    played = play_game(PlannedPlayer([["board"], ["resign"]]), WEAK, "black", out=tmp_path, analysis_depth=0)
    first = observations(played.run_dir)[0].text
    assert "You play black" in first and "Opponent's last move: none yet" not in first
    r = played.record
    assert r.termination == "resignation" and r.winner == "white" and r.plies == 1


@pytest.mark.parametrize(
    "fen, move, termination, result",
    [
        ("7k/4Q3/6K1/8/8/8/8/8 w - - 0 1", "Qe8#", "checkmate", "1-0"),
        ("7k/4Q3/6K1/8/8/8/8/8 w - - 0 1", "Qf7", "stalemate", "1/2-1/2"),
        ("7k/8/8/8/8/8/1p6/B5K1 w - - 0 1", "Bxb2", "insufficient_material", "1/2-1/2"),
        ("7k/8/8/8/8/8/8/R5K1 w - - 149 100", "Ra2", "seventyfive_moves", "1/2-1/2"),
    ],
)
def test_standard_endings_stop_the_run(tmp_path, fen, move, termination, result):
    played = play_game(PlannedPlayer([[f"move:{move}"]]), WEAK, "white", out=tmp_path, analysis_depth=0, start_fen=fen)
    r = played.record
    assert played.summary.stop_reason == "game_over" and played.summary.steps == 1
    assert (r.termination, r.result) == (termination, result)
    assert read_pgn(played.run_dir, r).headers["Result"] == result


def test_the_ply_cap_draws_the_game(tmp_path):
    played = play_game(
        RandomPlayer(seed=1), "random", "white", out=tmp_path, rules=GameRules(max_plies=6), analysis_depth=0
    )
    r = played.record
    assert (r.termination, r.result, r.plies, r.player_result) == ("max_plies", "1/2-1/2", 6, "draw")


def test_fivefold_repetition_ends_the_game():
    # Both sides shuffle their knights out and back; black's eighth move repeats the start a fifth time.
    game = Game(chess.BLACK, RandomOpponent(0), GameRules())
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"] * 4
    for uci in shuffle[:-1]:
        game.board.push_uci(uci)
    attempt = game.try_move(shuffle[-1])
    assert attempt.ok and game.ending is not None
    assert game.ending.termination == "fivefold_repetition" and game.result() == "1/2-1/2"


def test_a_run_that_stops_outside_the_game_leaves_an_unfinished_game(tmp_path):
    # A model that runs out of replies is a model error: the run stops, the game has no result.
    model = ScriptedModel(
        [
            ScriptedReply(tool_calls=[ScriptedCall(name="get_board")]),
            ScriptedReply(tool_calls=[ScriptedCall(name="make_move", arguments={"move": "e4"})]),
        ]
    )
    played = play_game(model, WEAK, "white", out=tmp_path, analysis_depth=0)
    r = played.record
    assert played.summary.stop_reason == "model_error"
    assert (r.termination, r.result, r.player_result, r.winner, r.plies) == ("aborted", "*", "aborted", None, 2)
    assert read_pgn(played.run_dir, r).headers["Result"] == "*"
    totals = aggregate([r])  # a batch counts an unfinished game as a loss
    assert (totals.losses, totals.aborted, totals.win_loss.value) == (1, 1, 0.0)


def test_harness_resume_refuses_a_chess_game_and_says_what_to_do(tmp_path):
    from agent.resume import resume
    from core.errors import HarnessError

    played = play_game(
        RandomPlayer(seed=3), WEAK, "white", out=tmp_path, rules=GameRules(max_plies=4), analysis_depth=0
    )
    journal = played.run_dir / "events.jsonl"
    # As if the process had died mid-game: the last events and the summary never got written.
    lines = journal.read_text().splitlines(keepends=True)
    kept = "".join(line for line in lines if '"run_stopped"' not in line)
    journal.write_text(kept)
    (played.run_dir / "summary.json").unlink()
    with pytest.raises(HarnessError, match=r"is a chess game.*harness chess --resume BATCH_DIR"):
        resume(played.run_dir)
    assert journal.read_text() == kept  # nothing appended
