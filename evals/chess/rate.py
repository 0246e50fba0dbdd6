"""Rate a player on the Elo scale: games against the calibrated ladder, each opponent chosen where the rating
is least certain, until the 95% interval is narrow enough or the game budget is spent.

The next opponent is the ladder's rung nearest the current estimate: one game against it tells the most
about the rating (the Fisher information E(1 − E) is largest at E = ½). While every game went one way there
is no estimate, only a bound, so the schedule steps STEP points past the strongest opponent beaten (or the
weakest lost to). Colours alternate, game i gets seed `seed + i` (the opponent's generator and the model's
sampling), and every game starts from the standard position, so a game is replayed from its row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agent.journal.store import make_folder, new_run_id, write_json_atomic
from agent.models.shared import shared_engines
from core.errors import HarnessError
from core.events import Event
from evals.chess import calibrate
from evals.chess.batch import Batch, ChessBatchSpec, GameRow, aggregate, play_one
from evals.chess.elo import Rating, rate
from evals.chess.opponents import stockfish_version
from evals.chess.runner import GameRun
from evals.executors import Budget

STEP = 300.0  # how far past the opponents met the schedule looks while every game went one way
START = 1500.0  # where a player with no games is first tried


@dataclass(frozen=True)
class RateSpec:
    """`batch` gives the model, policy, rules, seed and output folder (its opponent, games and colour are
    the schedule's); the ladder comes from the calibration table at `table`."""

    batch: ChessBatchSpec
    max_games: int = 40
    target_width: float = 200.0
    table: Path = calibrate.TABLE
    start: float = START


def next_opponent(rating: Rating, met: Sequence[float], ladder: Sequence[tuple[str, float]], start: float) -> str:
    """The rung nearest where the rating is least certain (see the module's note)."""
    if rating.elo is not None:
        target = rating.elo
    elif rating.low is not None:  # every game won
        target = max(met) + STEP
    elif rating.high is not None:  # every game lost
        target = min(met) - STEP
    else:
        target = start
    return min(ladder, key=lambda rung: abs(rung[1] - target))[0]


def play_rated(
    spec: RateSpec,
    listeners: Sequence[Callable[[Event], None]] = (),
    on_game: Callable[[int, GameRun, Rating], None] | None = None,
) -> tuple[Batch, Path]:
    """Play the schedule; batch.json is rewritten after every game with the rating so far."""
    table = calibrate.load(spec.table, stockfish_version())
    ladder = table.ladder()
    if not ladder:
        raise HarnessError(
            f"The calibration table {spec.table} rates no opponent; make one with harness chess calibrate."
        )
    elo_of = dict(ladder)
    base = spec.batch
    folder = Path(base.out) / new_run_id("chess-rate")
    make_folder(folder, "batch folder")
    rows: list[GameRow] = []
    results: list[tuple[float, float]] = []
    budget = Budget()
    rating = rate(results)

    def save() -> Batch:
        batch = Batch(
            batch_id=folder.name,
            model=rows[-1].record.model if rows else "",
            opponent=f"ladder ({spec.table.name}, {table.stockfish}, {table.nodes} nodes a move)",
            color="alternate",
            policy=base.policy.name,
            seed=base.seed,
            rules=base.rules,
            games=rows,
            aggregate=aggregate([r.record for r in rows]),
            cost=budget.record(),
            rating=rating,
        )
        write_json_atomic(folder / "batch.json", batch.model_dump(mode="json"))
        return batch

    with shared_engines():  # the schedule's games share one local engine
        for i in range(spec.max_games):
            if rating.width <= spec.target_width:
                break
            opponent = next_opponent(rating, [q for q, _ in results], ladder, spec.start)
            color = "white" if i % 2 == 0 else "black"
            played = play_one(replace(base, opponent=opponent, games=1), color, base.seed + i, listeners, folder)
            record = played.record
            score = {"win": 1.0, "draw": 0.5}.get(record.player_result, 0.0)  # an unfinished game is a loss
            results.append((elo_of[opponent], score))
            rating = rate(results)
            summary = played.summary
            budget.count((summary.cost_usd, summary.unpriced_calls))
            rows.append(
                GameRow(
                    game=i + 1,
                    run_dir=played.run_dir.name,
                    record=record,
                    cost_usd=summary.cost_usd,
                    unpriced_calls=summary.unpriced_calls,
                    opponent_elo=elo_of[opponent],
                )
            )
            save()
            if on_game is not None:
                on_game(i, played, rating)
    return save(), folder
