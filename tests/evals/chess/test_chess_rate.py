"""Rating a player against the calibrated ladder, with the real Stockfish and the shipped table."""

from __future__ import annotations

import json
from contextlib import closing

import pytest

from core.errors import HarnessError
from evals.chess import calibrate
from evals.chess.batch import ChessBatchSpec
from evals.chess.elo import Rating
from evals.chess.game import GameRules
from evals.chess.opponents import StockfishOpponent
from evals.chess.players import EnginePlayer, load_player
from evals.chess.rate import STEP, RateSpec, next_opponent, play_rated
from evals.chess.runner import play_game

LADDER = [("weak", 800.0), ("mid", 1350.0), ("strong", 1800.0)]


def test_the_next_opponent_is_the_rung_nearest_the_estimate():
    assert next_opponent(Rating(elo=1400, low=1200, high=1600, games=4), [1350], LADDER, 1500) == "mid"
    assert next_opponent(Rating(elo=None, low=None, high=None, games=0), [], LADDER, 1700) == "strong"


def test_while_every_game_went_one_way_the_schedule_steps_past_the_opponents_met():
    lost = Rating(elo=None, low=None, high=1700, games=1)  # one loss to 1350 leaves a bound above it
    assert next_opponent(lost, [1350], LADDER, 1500) == "weak" and 1350 - STEP < 1350
    won = Rating(elo=None, low=1000, high=None, games=1)
    assert next_opponent(won, [1350], LADDER, 1500) == "strong"


def test_player_stockfish_names_an_engine_and_gets_the_ladder_nodes():
    player = load_player("player:stockfish:elo=1800", 3)
    assert isinstance(player, EnginePlayer) and player.name == "player:stockfish:elo=1800"
    assert player.engine_spec == f"stockfish:elo=1800,nodes={calibrate.NODES}"
    assert load_player("player:stockfish:depth=2", 0).engine_spec == "stockfish:depth=2"
    with pytest.raises(HarnessError, match="elo"):
        load_player("player:stockfish:elo=99", 0)


def test_player_stockfish_plays_through_the_chess_tools(tmp_path):
    player = load_player("player:stockfish:elo=1350,nodes=500", 1)
    assert isinstance(player, EnginePlayer)
    with closing(player):
        played = play_game(player, "random", "white", out=tmp_path, analysis_depth=None, rules=GameRules(max_plies=12))
        stockfish = player.engine
        assert isinstance(stockfish, StockfishOpponent) and stockfish.engine.transport.get_returncode() is None
    assert stockfish.engine.transport.get_returncode() is not None  # closing the player stopped its engine
    r = played.record
    assert r.tool_calls["get_board"] >= r.moves == 6 and r.tool_calls["make_move"] == 6
    assert r.wrong_moves == 0 and r.termination in ("max_plies", "checkmate")


@pytest.mark.slow
def test_rating_player_random_recovers_the_random_movers_calibrated_rating(tmp_path):
    table = calibrate.load()
    random_elo = table.elo_of("random")
    assert random_elo is not None
    spec = RateSpec(
        ChessBatchSpec(1, lambda seed: load_player("player:random", seed), "random", out=tmp_path, analysis_depth=None),
        max_games=12,
        target_width=0,
    )
    batch, folder = play_rated(spec)
    rating = batch.rating
    assert rating is not None and rating.games == 12 == len(batch.games)
    assert rating.elo is not None and rating.low <= random_elo <= rating.high
    saved = json.loads((folder / "batch.json").read_text())
    assert saved["rating"] == rating.model_dump(mode="json")
    # colours alternate, each game has its own seed, and every opponent is a rung of the ladder
    rows = saved["games"]
    assert [g["record"]["color"] for g in rows[:2]] == ["white", "black"]
    assert len({g["record"]["seed"] for g in rows}) == 12
    assert all(g["opponent_elo"] == table.elo_of(g["record"]["opponent"]) for g in rows)


def test_harness_chess_rate_prints_the_rating_and_refuses_what_it_cannot_do(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    args = ["chess", "--rate", "--model", "player:random", "--out", str(tmp_path), "--analysis-depth", "0"]
    result = CliRunner().invoke(app, [*args, "--max-games", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert '"rating"' in result.stdout and "rating <" in result.output  # two losses: a bound
    refused = CliRunner().invoke(app, [*args, "--workers", "2"])
    assert refused.exit_code == 2 and "one game at a time" in refused.output
    missing = CliRunner().invoke(app, ["chess", "--games", "1"])
    assert missing.exit_code == 2 and "needs --model" in missing.output
