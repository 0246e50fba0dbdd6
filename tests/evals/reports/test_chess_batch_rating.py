"""A rated chess batch's report shows the Elo beside win_loss and the score per opponent Elo."""

from __future__ import annotations

import json

from evals.reports.chess import batch_rating


def rated_batch(tmp_path, rating, results, costs):
    games = [
        {"record": {"player_result": result}, "opponent_elo": elo, "cost_usd": cost}
        for (elo, result), cost in zip(results, costs)
    ]
    batch = {"rating": rating, "games": games, "aggregate": {"win_loss": {"value": 0.5}}}
    (tmp_path / "batch.json").write_text(json.dumps(batch))
    return tmp_path


def test_the_rating_the_win_loss_and_the_score_per_opponent(tmp_path):
    folder = rated_batch(
        tmp_path,
        {"elo": 1500.0, "low": 1300.0, "high": 1700.0, "games": 3},
        [(1500.0, "win"), (1500.0, "loss"), (1350.0, "draw")],
        [0.01, 0.02, 0.03],
    )
    r = batch_rating(folder)
    assert r is not None
    assert r.line == "1500 (95% CI 1300 to 1700)" and r.win_loss == "0.500"
    assert r.per_opponent == [("1350 · 1 game", 50.0), ("1500 · 2 games", 50.0)]
    assert r.cost_per_game == "$0.0200"


def test_all_lost_shows_a_bound_and_an_unknown_cost_shows_nothing(tmp_path):
    folder = rated_batch(tmp_path, {"elo": None, "low": None, "high": 900.0, "games": 1}, [(1350.0, "loss")], [None])
    r = batch_rating(folder)
    assert r is not None and r.line == "< 900 (every game lost)" and r.cost_per_game is None


def test_a_batch_without_a_rating_has_none(tmp_path):
    (tmp_path / "batch.json").write_text(json.dumps({"games": [], "aggregate": {}}))
    assert batch_rating(tmp_path) is None
    assert batch_rating(tmp_path / "nothing") is None
