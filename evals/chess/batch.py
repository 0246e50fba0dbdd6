"""A batch of games: one run directory per game inside a batch folder, plus batch.json.

The aggregate follows llm_chess: W/D/L, `win_loss = ((W − L)/N + 1)/2`, wrong
moves and wrong actions per 1,000 moves, tokens per move, each with a 95%
interval that holds for a few games: Wilson's for the score (a draw is half a
win), the exact Poisson interval for wrong moves and actions per move, and
Student's t over the games for tokens per move. A game the run stopped before it
ended (`aborted`) counts as a loss, as a game the agent failed to finish.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from agent.journal.store import make_folder, new_run_id, write_json_atomic
from agent.models.base import ModelClient
from agent.models.pricing import load_prices, price_for
from agent.session import SandboxSpec, check_code_sandbox
from core.errors import HarnessError
from core.events import Event
from core.policy import HarnessPolicy
from evals.chess.elo import Rating
from evals.chess.game import GameRules
from evals.chess.opponents import check_spec
from evals.chess.players import ModelMaker
from evals.chess.runner import GameRecord, GameRun, play_game
from evals.executors import BatchCost, Budget, Done, ExecutorOptions, Job, Tally, run_jobs
from evals.stats import mean_interval, poisson_rate, wilson

COLORS = ("white", "black", "alternate", "random")


@dataclass(frozen=True)
class ChessBatchSpec:
    """Everything that decides a batch. Game i gets seed `seed + i` (for the model's sampling, the opponent
    and the player) and a fresh client from `make_model` (a ModelMaker for a model string), closed when the
    game ends. Games run where `executor` says: one after another here by default, in threads, or as Ray
    tasks (then `make_model` must pickle); the games of one process share a local engine. `resume` names an earlier
    batch folder of the same settings: its finished games are kept and the others played; else the batch
    gets a new folder under `out`. Each call is priced from `prices` (default: agent/models/prices.toml); with
    `max_cost_usd`, no game starts once the batch's games (kept ones included) cost that much, counting
    each game still being played at the mean cost of the finished ones."""

    games: int
    make_model: Callable[[int], ModelClient]
    opponent: str
    color: str = "alternate"
    policy: HarnessPolicy = field(default_factory=HarnessPolicy)
    out: Path = Path("runs")
    seed: int = 0
    rules: GameRules = GameRules()
    analysis_depth: int | None = 8  # None: no move-quality analysis
    executor: ExecutorOptions = ExecutorOptions()
    resume: Path | None = None
    max_cost_usd: float | None = None
    prices: Path | None = None
    sandbox: SandboxSpec = SandboxSpec(kind="none")  # where run_code programs run, in code mode

    def __post_init__(self) -> None:
        if self.games < 1:
            raise ValueError("a batch needs at least one game")
        if self.color not in COLORS:
            raise HarnessError(f"--color must be one of {', '.join(COLORS)}, not {self.color!r}.")
        check_spec(self.opponent)
        check_code_sandbox(self.policy, has_sandbox=self.sandbox.kind != "none")
        if self.max_cost_usd is not None:  # a budget it cannot count is refused before any folder exists
            price_for(maker_name(self.make_model, self.seed), self.prices, self.max_cost_usd, "--max-cost-usd")
        elif self.prices is not None:  # a table that cannot be read: refused here, not by each game that opens
            load_prices(self.prices)


def maker_name(make: Callable[[int], ModelClient], seed: int) -> str:
    """The name of the model `make` makes: a ModelMaker says it without loading one; another maker's client
    is made to be asked, and closed."""
    if isinstance(make, ModelMaker):
        return make.name
    with closing(make(seed)) as model:
        return model.name


class Estimate(BaseModel):
    value: float | None
    low: float | None = None  # the 95% interval; None where it cannot be had (t with fewer than two games)
    high: float | None = None


class Aggregate(BaseModel):
    games: int
    wins: int
    draws: int
    losses: int  # aborted games included
    aborted: int
    win_loss: Estimate
    wrong_moves_per_1000_moves: Estimate
    wrong_actions_per_1000_moves: Estimate
    prompt_tokens_per_move: Estimate
    completion_tokens_per_move: Estimate
    avg_game_time_s: float | None
    avg_plies: float | None
    avg_cp_loss: float | None
    blunders_per_1000_moves: float | None


class GameRow(BaseModel):
    game: int
    run_dir: str  # relative to the batch folder
    record: GameRecord
    cost_usd: float | None = None  # summary.json's: None when unknown (and in batches from before costs)
    unpriced_calls: int = 0
    opponent_elo: float | None = None  # the opponent's calibrated Elo, in a rated batch (harness chess --rate)


class Batch(BaseModel):
    batch_id: str
    model: str
    opponent: str
    color: str
    policy: str
    seed: int
    rules: GameRules
    games: list[GameRow]
    aggregate: Aggregate
    cost: BatchCost = Field(default_factory=BatchCost)
    rating: Rating | None = None  # a rated batch's Elo (harness chess --rate)


def estimate(value: float | None, low: float = math.nan, high: float = math.nan) -> Estimate:
    def r(x: float | None) -> float | None:
        return round(x, 4) if x is not None and math.isfinite(x) else None

    return Estimate(value=r(value), low=r(low), high=r(high))


def score(records: Sequence[GameRecord]) -> Estimate:
    """The mean score (win 1, draw 0.5, loss 0) with Wilson's interval, which two games leave wide, not zero."""
    if not records:
        return Estimate(value=None)
    points = sum(1.0 if r.player_result == "win" else 0.5 if r.player_result == "draw" else 0.0 for r in records)
    return estimate(points / len(records), *wilson(points, len(records)))


def per_move(records: Sequence[GameRecord], count: Callable[[GameRecord], int], scale: float = 1.0) -> Estimate:
    """A count per move over all moves, with the exact Poisson interval."""
    moves = sum(r.moves for r in records)
    if not moves:
        return Estimate(value=None)
    events = sum(count(r) for r in records)
    low, high = poisson_rate(events, moves)
    return estimate(scale * events / moves, scale * low, scale * high)


def amount_per_move(records: Sequence[GameRecord], amount: Callable[[GameRecord], float]) -> Estimate:
    """An amount per move over all moves, with Student's t interval from the games' own rates."""
    moves = sum(r.moves for r in records)
    if not moves:
        return Estimate(value=None)
    pooled = sum(amount(r) for r in records) / moves
    mean, low, high = mean_interval([amount(r) / r.moves for r in records if r.moves])
    return estimate(pooled, pooled - (mean - low), pooled + (high - mean))


def aggregate(records: Sequence[GameRecord]) -> Aggregate:
    n = len(records)
    wins = sum(r.player_result == "win" for r in records)
    draws = sum(r.player_result == "draw" for r in records)
    aborted = sum(r.player_result == "aborted" for r in records)
    losses = n - wins - draws
    analysed = [r.quality for r in records if r.quality is not None and r.quality.analysed_moves]
    analysed_moves = sum(q.analysed_moves for q in analysed)
    return Aggregate(
        games=n,
        wins=wins,
        draws=draws,
        losses=losses,
        aborted=aborted,
        win_loss=score(records),  # its mean is ((W − L)/N + 1)/2
        wrong_moves_per_1000_moves=per_move(records, lambda r: r.wrong_moves, 1000),
        wrong_actions_per_1000_moves=per_move(records, lambda r: r.wrong_actions, 1000),
        prompt_tokens_per_move=amount_per_move(records, lambda r: r.tokens["prompt"]),
        completion_tokens_per_move=amount_per_move(records, lambda r: r.tokens["completion"]),
        avg_game_time_s=round(sum(r.game_time_s for r in records) / n, 3) if n else None,
        avg_plies=round(sum(r.plies for r in records) / n, 1) if n else None,
        avg_cp_loss=round(
            sum(q.avg_cp_loss * q.analysed_moves for q in analysed if q.avg_cp_loss is not None) / analysed_moves, 1
        )
        if analysed_moves
        else None,
        blunders_per_1000_moves=round(1000 * sum(q.blunders for q in analysed) / analysed_moves, 1)
        if analysed_moves
        else None,
    )


def game_colors(color: str, games: int, seed: int) -> list[str]:
    if color in ("white", "black"):
        return [color] * games
    if color == "alternate":
        return ["white" if i % 2 == 0 else "black" for i in range(games)]
    rng = random.Random(seed)  # random: the spec allows no other colour
    return [rng.choice(["white", "black"]) for _ in range(games)]


def play_one(
    spec: ChessBatchSpec, color: str, seed: int, listeners: Sequence[Callable[[Event], None]], out_dir: Path
) -> GameRun:
    """A batch job: one game with a fresh model seeded `seed` (the run samples with it), into a run directory
    under `out_dir`."""
    with closing(spec.make_model(seed)) as model:
        return play_game(
            model,
            spec.opponent,
            color,
            spec.policy,
            out_dir,
            seed,
            spec.rules,
            spec.analysis_depth,
            listeners=listeners,
            prices=spec.prices,
            sandbox=spec.sandbox,
        )


def play_batch(
    spec: ChessBatchSpec,
    listeners: Sequence[Callable[[Event], None]] = (),
    on_game: Callable[[int, GameRun], None] | None = None,
    tally: Tally | None = None,
) -> tuple[Batch, Path]:
    """Play the batch `spec` describes; `on_game` hears of each finished game, and `listeners` of each
    game's events (they run where a game is played, so only on the local executor)."""
    games = spec.games
    if listeners and spec.executor.kind != "local":
        raise ValueError("listeners run where a game is played; with a remote executor use on_game")
    colors = game_colors(spec.color, games, spec.seed)
    if spec.resume is not None:
        folder, rows = Path(spec.resume), kept_games(Path(spec.resume), spec)
    else:
        folder, rows = Path(spec.out) / new_run_id(f"chess-batch-{spec.opponent}"), {}
        make_folder(folder, "batch folder")
    batch_id = folder.name
    tally = tally or Tally(total=games)
    budget = Budget(spec.max_cost_usd, lambda run: (run.summary.cost_usd, run.summary.unpriced_calls))
    for row in rows.values():
        tally.reused(str(row.game))
        budget.count((row.cost_usd, row.unpriced_calls))

    def save() -> Batch:
        # Rewritten after every game, in game order, so an interrupted batch still leaves its finished games.
        ordered = [rows[g] for g in sorted(rows)]
        model_name = ordered[-1].record.model if ordered else ""
        batch = Batch(
            batch_id=batch_id,
            model=model_name,
            opponent=spec.opponent,
            color=spec.color,
            policy=spec.policy.name,
            seed=spec.seed,
            rules=spec.rules,
            games=ordered,
            aggregate=aggregate([r.record for r in ordered]),
            cost=budget.record(),
        )
        write_json_atomic(folder / "batch.json", batch.model_dump(mode="json"))
        return batch

    failures: list[str] = []

    def arrived(done: Done) -> None:
        i = int(done.key) - 1
        if done.error is not None:
            failures.append(f"game {done.key}: {done.error}")
            return
        played = replace(done.result, run_dir=folder / done.result.run_dir.name)  # its place in the batch folder
        summary = played.summary
        rows[i + 1] = GameRow(
            game=i + 1,
            run_dir=played.run_dir.name,
            record=played.record,
            cost_usd=summary.cost_usd,
            unpriced_calls=summary.unpriced_calls,
        )
        save()
        if on_game is not None:
            on_game(i, played)

    jobs = [
        Job(str(i + 1), play_one, (spec, colors[i], spec.seed + i, tuple(listeners)))
        for i in range(games)
        if i + 1 not in rows
    ]
    try:
        run_jobs(jobs, folder, spec.executor, arrived, tally, budget)
    finally:
        tally.write(folder / "executor.json", [str(i + 1) for i in range(games)])
    batch = save()
    if failures:
        raise HarnessError(
            f"{len(failures)} of {games} games failed ({'; '.join(failures)}). The finished games are in "
            f"{folder / 'batch.json'}; play the rest with --resume {folder}."
        )
    return batch, folder


def kept_games(folder: Path, spec: ChessBatchSpec) -> dict[int, GameRow]:
    """The finished games of an earlier run of this batch; a run directory of an unfinished game is moved aside."""
    path = folder / "batch.json"
    if not path.exists():
        raise HarnessError(f"{folder} is not a chess batch folder: it has no batch.json.")
    old = Batch.model_validate_json(path.read_text())
    settings = (old.opponent, old.color, old.policy, old.seed, old.rules)
    if settings != (spec.opponent, spec.color, spec.policy.name, spec.seed, spec.rules):
        raise HarnessError(
            f"{folder} was played with other settings (opponent {old.opponent}, color {old.color}, "
            f"policy {old.policy}, seed {old.seed}, {old.rules}); resume it with the same ones."
        )
    rows = {r.game: r for r in old.games if r.game <= spec.games and (folder / r.run_dir / "summary.json").exists()}
    keep = {r.run_dir for r in rows.values()}
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    for child in folder.iterdir():
        if child.is_dir() and not child.name.startswith(".") and child.name not in keep:
            child.rename(folder / f".{child.name}.incomplete-{stamp}")
    return rows
