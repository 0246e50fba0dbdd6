"""A batch of games: one run directory per game inside a batch folder, plus batch.json.

The aggregate follows llm_chess: W/D/L, `win_loss = ((W − L)/N + 1)/2`, wrong
moves and wrong actions per 1,000 moves, tokens per move, each with a 95%
margin (1.96 standard errors over the games). A game the run stopped before it
ended (`aborted`) counts as a loss, as a game the agent failed to finish.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from agent.events import Event
from agent.journal import new_run_id, write_json_atomic
from agent.models.base import ModelClient
from agent.policy import HarnessPolicy
from evals.chess.game import GameRules
from evals.chess.opponents import check_spec
from evals.chess.runner import GameRecord, GameRun, play_game

COLORS = ("white", "black", "alternate", "random")


class Estimate(BaseModel):
    value: float | None
    margin: float | None  # half-width of the 95% interval; None with fewer than two games


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


def mean_margin(values: Sequence[float]) -> Estimate:
    if not values:
        return Estimate(value=None, margin=None)
    mean = sum(values) / len(values)
    if len(values) < 2:
        return Estimate(value=round(mean, 4), margin=None)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return Estimate(value=round(mean, 4), margin=round(1.96 * math.sqrt(var / len(values)), 4))


def per_move(records: Sequence[GameRecord], count: Callable[[GameRecord], float], scale: float = 1.0) -> Estimate:
    """The pooled rate over all moves, with a margin from the per-game rates (games with a move)."""
    moves = sum(r.moves for r in records)
    if not moves:
        return Estimate(value=None, margin=None)
    pooled = scale * sum(count(r) for r in records) / moves
    spread = mean_margin([scale * count(r) / r.moves for r in records if r.moves])
    return Estimate(value=round(pooled, 4), margin=spread.margin)


def aggregate(records: Sequence[GameRecord]) -> Aggregate:
    n = len(records)
    wins = sum(r.player_result == "win" for r in records)
    draws = sum(r.player_result == "draw" for r in records)
    aborted = sum(r.player_result == "aborted" for r in records)
    losses = n - wins - draws
    # Per game: 1 a win, 0.5 a draw, 0 a loss; its mean is ((W − L)/N + 1)/2.
    scores = [1.0 if r.player_result == "win" else 0.5 if r.player_result == "draw" else 0.0 for r in records]
    analysed = [r.quality for r in records if r.quality is not None and r.quality.analysed_moves]
    analysed_moves = sum(q.analysed_moves for q in analysed)
    return Aggregate(
        games=n, wins=wins, draws=draws, losses=losses, aborted=aborted,
        win_loss=mean_margin(scores),
        wrong_moves_per_1000_moves=per_move(records, lambda r: r.wrong_moves, 1000),
        wrong_actions_per_1000_moves=per_move(records, lambda r: r.wrong_actions, 1000),
        prompt_tokens_per_move=per_move(records, lambda r: r.tokens["prompt"]),
        completion_tokens_per_move=per_move(records, lambda r: r.tokens["completion"]),
        avg_game_time_s=round(sum(r.game_time_s for r in records) / n, 3) if n else None,
        avg_plies=round(sum(r.plies for r in records) / n, 1) if n else None,
        avg_cp_loss=round(sum(q.avg_cp_loss * q.analysed_moves for q in analysed) / analysed_moves, 1)
        if analysed_moves else None,
        blunders_per_1000_moves=round(1000 * sum(q.blunders for q in analysed) / analysed_moves, 1)
        if analysed_moves else None,
    )


def game_colors(color: str, games: int, seed: int) -> list[str]:
    if color in ("white", "black"):
        return [color] * games
    if color == "alternate":
        return ["white" if i % 2 == 0 else "black" for i in range(games)]
    if color == "random":
        rng = random.Random(seed)
        return [rng.choice(["white", "black"]) for _ in range(games)]
    raise ValueError(f"color must be one of {', '.join(COLORS)}, not {color!r}")


def play_batch(
    games: int,
    make_model: Callable[[int], ModelClient],
    opponent: str,
    color: str = "alternate",
    policy: HarnessPolicy | None = None,
    out: Path = Path("runs"),
    seed: int = 0,
    rules: GameRules = GameRules(),
    analysis_depth: int | None = 8,
    listeners: Sequence[Callable[[Event], None]] = (),
    on_game: Callable[[int, GameRun], None] | None = None,
) -> tuple[Batch, Path]:
    """Game i gets seed `seed + i` (for the model's sampling, the opponent and the player), and a fresh model."""
    if games < 1:
        raise ValueError("a batch needs at least one game")
    check_spec(opponent)
    policy = policy or HarnessPolicy()
    colors = game_colors(color, games, seed)
    batch_id = new_run_id(f"chess-batch-{opponent}")
    folder = Path(out) / batch_id
    folder.mkdir(parents=True, exist_ok=False)
    rows: list[GameRow] = []
    model_name = ""
    for i, game_color in enumerate(colors):
        game_seed = seed + i
        model = make_model(game_seed)
        model_name = model.name
        game_policy = policy.model_copy(update={"model": policy.model.model_copy(update={"seed": game_seed})})
        played = play_game(model, opponent, game_color, game_policy, folder, game_seed, rules, analysis_depth,
                           listeners=listeners)
        rows.append(GameRow(game=i + 1, run_dir=played.run_dir.name, record=played.record))
        # Rewritten after every game, so an interrupted batch still leaves its finished games.
        batch = Batch(batch_id=batch_id, model=model_name, opponent=opponent, color=color, policy=policy.name,
                      seed=seed, rules=rules, games=rows, aggregate=aggregate([r.record for r in rows]))
        write_json_atomic(folder / "batch.json", batch.model_dump(mode="json"))
        if on_game is not None:
            on_game(i, played)
    return batch, folder
