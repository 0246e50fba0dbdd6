"""harness ab's Elo line for two rated chess batches, from their batch.json alone."""

from __future__ import annotations

import json
import math

import pytest

from evals.ab.chess_elo import elo_line, rated_results


def rated(folder, results, cost=None):
    """`cost`: each game's cost_usd and unpriced_calls."""
    folder.mkdir()
    games = [{"record": {"player_result": r}, "opponent_elo": elo, **(cost or {})} for elo, r in results]
    (folder / "batch.json").write_text(json.dumps({"rating": {"elo": 0}, "games": games}))
    return folder


def test_two_rated_batches_get_the_elo_difference(tmp_path):
    a = rated(tmp_path / "a", [(1500.0, "win"), (1500.0, "loss")])
    b = rated(tmp_path / "b", [(1500.0, "win")] * 3 + [(1500.0, "aborted")])
    assert rated_results(b) == [(1500.0, 1.0)] * 3 + [(1500.0, 0.0)]
    line = elo_line(a, b)
    assert line is not None and f"B − A {400 * math.log10(3):+.0f} (95% CI" in line


def test_known_costs_give_the_cost_per_game_and_per_elo_point_gained(tmp_path):
    a = rated(tmp_path / "a", [(1500.0, "win"), (1500.0, "loss")], {"cost_usd": 0.10, "unpriced_calls": 0})
    b = rated(tmp_path / "b", [(1500.0, "win")] * 3 + [(1500.0, "loss")], {"cost_usd": 0.25, "unpriced_calls": 0})
    gained = 400 * math.log10(3)  # B scores 3 of 4 where A scored 1 of 2, against the same opponent
    line = elo_line(a, b) or ""
    assert "Cost per game: A $0.1000, B $0.2500" in line
    assert f"B − A $0.1500 more per game, ${0.15 / gained:.4f} per Elo point gained." in line
    c = rated(tmp_path / "c", [(1500.0, "win")] * 3 + [(1500.0, "loss")], {"cost_usd": 0.25, "unpriced_calls": 2})
    assert "Cost per game" not in (elo_line(a, c) or "")  # a lower bound is no cost to divide


def test_a_side_that_lost_everything_has_no_interval_and_other_folders_no_line(tmp_path):
    a = rated(tmp_path / "a", [(1500.0, "loss")] * 3)
    b = rated(tmp_path / "b", [(1500.0, "win"), (1500.0, "loss")])
    assert "no interval" in (elo_line(a, b) or "")
    (tmp_path / "plain").mkdir()
    assert elo_line(tmp_path / "plain", b) is None


@pytest.mark.parametrize("content", ['{"games": []}', "[]"])
def test_a_batch_without_a_rating_is_not_rated(tmp_path, content):
    (tmp_path / "batch.json").write_text(content)
    assert rated_results(tmp_path) is None
