"""The ladder's calibration against the real Stockfish: a small ladder, fast rungs."""

from __future__ import annotations

import pytest

from core.errors import HarnessError
from evals.chess import calibrate
from evals.chess.opponents import stockfish_version


def small_ladder():
    # the random mover, one of its rungs, skill 0 and the lowest anchor: games of a fraction of a second
    return [
        r
        for r in calibrate.rungs(skills=[0], anchors=[1350], nodes=500)
        if "0.75" not in r.spec and "0.25" not in r.spec
    ]


@pytest.mark.slow
def test_a_calibration_places_the_free_rungs_and_records_its_provenance(tmp_path):
    table = calibrate.calibrate(small_ladder(), games_per_pair=2, seed=5, command="harness chess calibrate --test")
    assert table.stockfish == stockfish_version() and table.stockfish.startswith("Stockfish")
    assert table.nodes == 500 and len(table.runs) == 1
    assert (table.runs[0].seed, table.runs[0].command, table.runs[0].games) == (
        5,
        "harness chess calibrate --test",
        len(table.games),
    )
    specs = [p.spec for p in table.players]
    assert {"random", "stockfish:elo=1350,nodes=500", "stockfish:skill=0,nodes=500"} <= set(specs)
    assert next(p for p in table.players if p.anchor).rating.elo == 1350
    # colours alternate within a pair and every game has its own seed
    assert len({g.seed for g in table.games}) == len(table.games)
    assert table.games[0].white == table.games[1].black
    path = tmp_path / "calibration.json"
    calibrate.save(table, path)
    assert calibrate.load(path, table.stockfish) == table
    # a second run adds its games to the table's and fits them all
    more = calibrate.calibrate(small_ladder(), 2, seed=500, command="again", earlier=table)
    assert [r.command for r in more.runs] == ["harness chess calibrate --test", "again"]
    assert more.games[: len(table.games)] == table.games and len(more.games) == 2 * len(table.games)
    with pytest.raises(HarnessError, match="at 500 nodes a move"):
        calibrate.calibrate(
            calibrate.rungs(skills=[0], anchors=[1350], weak=False, nodes=400), 1, 0, "x", earlier=table
        )


def test_a_table_from_another_stockfish_is_refused_with_both_versions_named(tmp_path):
    table = calibrate.Calibration(stockfish="Stockfish 16", nodes=500, runs=[], players=[], games=[])
    path = tmp_path / "calibration.json"
    calibrate.save(table, path)
    with pytest.raises(HarnessError, match="made with Stockfish 16, and the Stockfish here is Stockfish 15.1"):
        calibrate.load(path, "Stockfish 15.1")


def test_the_shipped_table_names_its_provenance_and_rates_the_random_mover():
    table = calibrate.load(calibrate.TABLE)
    assert table.stockfish.startswith("Stockfish") and all(
        r.command.startswith("harness chess calibrate") for r in table.runs
    )
    assert table.elo_of("random") is not None and table.elo_of("random") < 1350
    ladder = [elo for _, elo in table.ladder()]
    assert ladder == sorted(ladder)
