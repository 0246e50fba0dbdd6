import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.chess.elo import (
    HALF_CHI2,
    SCALE,
    difference,
    expected,
    fisher_information,
    fit_ladder,
    log_likelihood,
    rate,
)


def test_one_win_one_loss_against_1500_is_1500():
    r = rate([(1500, 1), (1500, 0)])
    assert r.elo == pytest.approx(1500, abs=0.1)
    assert r.low < 1500 < r.high


@pytest.mark.parametrize("points,n", [(3, 4), (1, 5), (7.5, 10), (2, 3)])
def test_one_opponent_has_the_closed_form(points, n):
    halves = int(points * 2)
    results = (
        [(1800.0, 1.0)] * (halves // 2) + [(1800.0, 0.5)] * (halves % 2) + [(1800.0, 0.0)] * (n - math.ceil(points))
    )
    assert sum(s for _, s in results) == points and len(results) == n
    assert rate(results).elo == pytest.approx(1800 + 400 * math.log10(points / (n - points)), abs=0.1)


def test_the_interval_is_where_the_likelihood_drops_by_half_chi2():
    results = [(1500, 1)] * 6 + [(1500, 0)] * 2 + [(1700, 0.5)] * 2
    r = rate(results)
    top = log_likelihood(r.elo, results)
    for bound in (r.low, r.high):
        assert log_likelihood(bound, results) == pytest.approx(top - HALF_CHI2, abs=1e-3)
    # skewed the way the score leans: 6 wins of 8 leaves more room above than below
    assert r.high - r.elo > r.elo - r.low


def test_two_games_vs_one_opponent_interval_by_hand():
    # 1 win 1 loss vs 1500: log L(r) = ln E + ln(1−E), maximal at E = ½; the bounds have E(1−E) = ¼·e^−1.92
    r = rate([(1500, 1), (1500, 0)])
    p = (1 + math.sqrt(1 - math.exp(-HALF_CHI2))) / 2
    assert r.high == pytest.approx(1500 + 400 * math.log10(p / (1 - p)), abs=0.5)
    assert r.low == pytest.approx(1500 - 400 * math.log10(p / (1 - p)), abs=0.5)


def test_every_game_won_gives_a_lower_bound_alone():
    r = rate([(1500, 1)] * 5)
    assert r.elo is None and r.high is None
    # five wins had a 5% chance at the bound: E^5 = 0.05
    e = 0.05 ** (1 / 5)
    assert r.low == pytest.approx(1500 + 400 * math.log10(e / (1 - e)), abs=0.5)
    assert "every game won" in r.line()


def test_every_game_lost_gives_an_upper_bound_alone():
    r = rate([(1500, 0)] * 6)
    assert r.elo is None and r.low is None and r.high < 1500
    # two losses leave a bound above the opponent: losing twice is not rare for a slightly stronger player
    assert rate([(1500, 0)] * 2).high > 1500


def test_no_games_no_rating():
    assert rate([]).elo is None and rate([]).games == 0


def test_fisher_information_is_largest_against_an_equal():
    assert fisher_information(1500, [1500]) > fisher_information(1500, [1700]) > fisher_information(1500, [2100])
    assert fisher_information(1500, [1500]) == pytest.approx(0.25 / SCALE**2)


scores = st.lists(
    st.tuples(st.sampled_from([1300.0, 1500.0, 1800.0]), st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=12
)


@settings(max_examples=60, deadline=None)
@given(scores, st.integers(0, 11))
def test_a_better_result_never_lowers_the_estimate(results, i):
    i %= len(results)
    q, s = results[i]
    if s == 1.0:
        return
    better = results[:i] + [(q, s + 0.5)] + results[i + 1 :]
    before, after = rate(results), rate(better)
    # compare the point, or the bound where there is no point
    place = lambda r: r.elo if r.elo is not None else (r.low if r.low is not None else r.high)  # noqa: E731
    if before.elo is not None and after.elo is None:
        assert after.low is not None and after.low >= before.low - 0.5
    elif before.elo is None and before.high is not None and after.elo is not None:
        assert after.high >= before.high - 0.5
    else:
        assert place(after) >= place(before) - 0.5


def test_ladder_fit_recovers_a_free_player_between_anchors():
    # free X: 3 of 4 against A (1500), 1 of 4 against B (1900) → symmetric, so 1700
    games = [("X", "A", 1.0)] * 3 + [("A", "X", 1.0)] + [("X", "B", 1.0)] + [("B", "X", 1.0)] * 3
    fit = fit_ladder(games, {"A": 1500, "B": 1900})
    assert fit["X"].elo == pytest.approx(1700, abs=0.5)
    assert fit["X"].low < 1700 < fit["X"].high
    assert fit["A"].elo == 1500 and fit["A"].games == 4


def test_ladder_fit_matches_the_one_player_fit_when_only_anchors_are_met():
    games = [("X", "A", 1.0), ("X", "A", 0.5), ("A", "X", 1.0), ("X", "B", 0.0), ("B", "X", 0.5)]
    one = rate([(1500, 1.0), (1500, 0.5), (1500, 0.0), (1900, 0.0), (1900, 0.5)])
    assert fit_ladder(games, {"A": 1500, "B": 1900})["X"].elo == pytest.approx(one.elo, abs=0.5)


def test_ladder_fit_chains_free_players_and_bounds_one_who_lost_everything():
    # Y meets only X, X meets the anchor; Z lost all of its six games to Y
    games = [("X", "A", 1.0), ("A", "X", 1.0), ("Y", "X", 1.0), ("X", "Y", 0.0), ("Y", "X", 0.0)]
    games += [("Z", "Y", 0.0), ("Y", "Z", 1.0)] * 3
    fit = fit_ladder(games, {"A": 1500})
    assert fit["X"].elo == pytest.approx(1500, abs=0.5)
    assert fit["Y"].elo == pytest.approx(1500 + 400 * math.log10(2), abs=0.5)  # 2 of 3 against X
    assert fit["Z"].elo is None and fit["Z"].high < fit["Y"].elo


def test_expected_is_symmetric():
    assert expected(1600, 1400) + expected(1400, 1600) == pytest.approx(1)
    assert expected(1900, 1500) == pytest.approx(1 / (1 + 10**-1))


def test_a_group_that_lost_every_game_to_the_rest_is_left_out_of_the_joint_fit():
    # P and Q split their games, and both lost every game to X, who is joined to the anchor
    games = [("X", "A", 1.0), ("A", "X", 1.0), ("P", "Q", 1.0), ("Q", "P", 1.0)]
    games += [("P", "X", 0.0), ("X", "Q", 1.0)] * 3
    fit = fit_ladder(games, {"A": 1500})
    assert fit["X"].elo == pytest.approx(1500, abs=0.5)
    assert fit["P"].elo is None and fit["P"].high is not None
    assert fit["Q"].elo is None and fit["Q"].high is not None


def test_the_elo_difference_is_the_difference_of_the_ratings_with_a_wider_interval():
    a = [(1500.0, 1.0), (1500.0, 0.0)]
    b = [(1500.0, 1.0)] * 3 + [(1500.0, 0.0)]
    d = difference(a, b)
    assert d is not None and d.elo == pytest.approx(400 * math.log10(3), abs=0.5)
    ra, rb = rate(a), rate(b)
    assert d.low < d.elo < d.high
    assert d.high - d.low > max(ra.high - ra.low, rb.high - rb.low)


def test_equal_results_differ_by_nothing_and_a_bound_gives_no_difference():
    a = [(1500.0, 1.0), (1700.0, 0.5), (1600.0, 0.0)]
    d = difference(a, a)
    assert d is not None and d.elo == pytest.approx(0, abs=0.5) and d.low < 0 < d.high
    assert d.low == pytest.approx(-d.high, abs=1)
    assert difference(a, [(1500.0, 1.0)]) is None
