"""Play one game: the agent loop drives a ModelClient through the chess tools against an opponent.

The run is an ordinary run directory (run.json, events.jsonl, summary.json,
artifacts/). The game ends the loop through a stop rule with the reason
`game_over`; afterwards the PGN goes to `artifacts/game.pgn`, and the game's
record (result and figures, see GameRecord) replaces `outcome` in summary.json.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
from pydantic import BaseModel

from agent.journal.store import read_events
from agent.journal.summary import Summary
from agent.loop import run
from agent.models.base import ModelClient
from agent.run.state import Dispatched, RunState
from agent.run.stopping import Stop
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, open_run
from core.events import Event
from core.policy import HarnessPolicy
from evals.chess.analysis import Evaluator, MoveQuality, analyse_game
from evals.chess.game import Game, GameRules, color_name, material
from evals.chess.metrics import journal_figures
from evals.chess.opponents import open_opponent
from evals.chess.tools import chess_tools

SYSTEM = (
    "You are a professional chess player and you play as {color}. Act only through tools: get_board shows the "
    "position, get_legal_moves lists the legal moves, make_move plays one move in UCI (e2e4) or SAN (Nf3) "
    "notation, resign gives up. The opponent replies to your move at once, so read the board again after every "
    "move. Each turn you have at most {replies} replies and {failed} failed moves; past either limit the game is "
    "lost. The game is drawn after {plies} plies."
)


class GameRecord(BaseModel):
    """One game's result and figures: what summary.json's `outcome` holds for a chess run."""

    color: str
    opponent: str
    model: str
    seed: int | None
    result: str  # PGN result: 1-0, 0-1, 1/2-1/2, or * when the run stopped before the game ended
    winner: str | None  # white, black, or None for a draw or an unfinished game
    player_result: str  # win, draw, loss, aborted
    termination: str  # checkmate, stalemate, insufficient_material, seventyfive_moves, fivefold_repetition,
    # max_plies, resignation, forfeit_wrong_moves, forfeit_replies, aborted
    message: str
    plies: int
    moves: int  # legal moves the agent played
    pgn: str  # path of the PGN, relative to the run directory
    wrong_moves: int
    wrong_actions: int
    extra_moves_rejected: int
    rejected_calls: int
    replies: int
    tool_calls: dict[str, int]
    tokens: dict[str, int]  # prompt, completion, cached, reasoning
    reasoning_chars: int
    board_observation_chars: int
    prompt_chars: int
    prompt_chars_per_move: float | None
    reply_time_s: float
    game_time_s: float
    material: dict[str, int]  # white, black: pawns 1, knights and bishops 3, rooks 5, queens 9
    material_balance: int  # the agent's material minus the opponent's
    quality: MoveQuality | None


@dataclass(frozen=True)
class GameRun:
    summary: Summary
    run_dir: Path
    record: GameRecord


def chess_policy(policy: HarnessPolicy, rules: GameRules) -> HarnessPolicy:
    """The game's per-turn limits replace the loop's generic no-progress rules, which would
    otherwise end a game early (3 replies without a call; 50 steps in all)."""
    stop = policy.stop.model_copy(
        update={
            "max_steps": (rules.max_plies + 1) // 2 * rules.max_replies + 1,
            "max_no_tool_replies": rules.max_replies,
            "max_repeats": max(2, rules.max_replies),
        }
    )
    return policy.model_copy(update={"stop": stop})


def game_task(game: Game, opponent: str, asked: str | None = None, task_id: str | None = None) -> Task:
    color = color_name(game.player)
    system = SYSTEM.format(
        color=color, replies=game.rules.max_replies, failed=game.rules.max_failed_moves, plies=game.rules.max_plies
    )
    last = game.last_opponent_move()
    opening = f" The opponent opened with {last}." if last else ""
    prompt = f"A new game against {opponent}. You play {color}.{opening} {asked or 'It is your move.'}"
    return Task(id=task_id or f"chess-{color}-vs-{opponent}", prompt=prompt, system=system)


def game_rule(game: Game) -> Callable[[RunState, Dispatched], Stop | None]:
    def rule(state: RunState, done: Dispatched) -> Stop | None:
        game.end_of_reply()
        if game.ending is None:
            return None
        return Stop("game_over", game.ending.message, game_outcome(game))

    return rule


def game_outcome(game: Game) -> dict[str, Any]:
    assert game.ending is not None
    winner = game.ending.winner
    return {
        "result": game.result(),
        "winner": color_name(winner) if winner is not None else None,
        "player_result": game.player_result(),
        "termination": game.ending.termination,
        "plies": len(game.board.move_stack),
    }


def play_game(
    model: ModelClient,
    opponent: str = "stockfish:skill=0",
    color: str = "white",
    policy: HarnessPolicy | None = None,
    out: Path = Path("runs"),
    seed: int | None = 0,
    rules: GameRules = GameRules(),
    analysis_depth: int | None = 8,
    start_fen: str | None = None,
    listeners: Sequence[Callable[[Event], None]] = (),
    prices: Path | None = None,
    sandbox: SandboxSpec = SandboxSpec(kind="none"),
    prompt: str | None = None,
    task_id: str | None = None,
) -> GameRun:
    """Play one game to its end; `analysis_depth` None or 0 skips the Stockfish move-quality pass. Its calls
    are priced from `prices` (default: agent/models/prices.toml). The game needs no sandbox; `sandbox` is where
    run_code programs run under a policy of code mode. `prompt`: the task's words after the position (default:
    it is your move); `task_id`: the task's name (default: the colour and opponent)."""
    if color not in ("white", "black"):
        raise ValueError(f"color must be white or black, not {color!r}")
    the_policy = chess_policy(policy or HarnessPolicy(), rules)
    engine = open_opponent(opponent, seed)
    evaluator = None
    try:
        evaluator = Evaluator(rules.evaluation_depth) if rules.evaluation_depth else None
        game = Game(chess.WHITE if color == "white" else chess.BLACK, engine, rules, start_fen)
        game.open()
        task = game_task(game, opponent, prompt, task_id)
        spec = RunSpec(
            task,
            model,
            the_policy,
            out,
            sandbox=sandbox,
            toolset="chess",
            tools=chess_tools(game, evaluator),
            seed=seed,
            listeners=listeners,
            stop_rules=[game_rule(game)],
            prices=prices,
        )
        with open_run(spec) as session:
            summary = run(session)
            journal = session.journal
            game.abort(f"the run stopped ({summary.stop_reason}: {summary.message})")
            pgn = journal.store_artifact("game.pgn", game.pgn(model.name))
            record = game_record(
                game, summary, journal.dir, pgn, model.name, opponent, seed, the_policy, analysis_depth
            )
            summary = summary.model_copy(update={"outcome": record.model_dump(mode="json")})
            journal.write_summary(summary)
    finally:
        engine.close()
        if evaluator is not None:
            evaluator.close()
    return GameRun(summary, journal.dir, record)


def game_record(
    game: Game,
    summary: Summary,
    run_dir: Path,
    pgn: str,
    model: str,
    opponent: str,
    seed: int | None,
    policy: HarnessPolicy,
    analysis_depth: int | None,
) -> GameRecord:
    assert game.ending is not None
    f = journal_figures(read_events(run_dir), policy.context)
    mat = material(game.board)
    mine, theirs = mat[color_name(game.player)], mat[color_name(not game.player)]
    quality = None
    if analysis_depth:
        quality = analyse_game(game.start_fen, game.board.move_stack, game.player, analysis_depth)
    return GameRecord(
        color=color_name(game.player),
        opponent=opponent,
        model=model,
        seed=seed,
        **game_outcome(game),
        message=game.ending.message,
        moves=f.moves,
        pgn=pgn,
        wrong_moves=f.wrong_moves,
        wrong_actions=f.wrong_actions,
        extra_moves_rejected=f.extra_moves_rejected,
        rejected_calls=f.rejected_calls,
        replies=f.replies,
        tool_calls=f.tool_calls,
        tokens={
            "prompt": f.prompt_tokens,
            "completion": f.completion_tokens,
            "cached": f.cached_tokens,
            "reasoning": f.reasoning_tokens,
        },
        reasoning_chars=f.reasoning_chars,
        board_observation_chars=f.board_observation_chars,
        prompt_chars=f.prompt_chars,
        prompt_chars_per_move=round(f.prompt_chars / f.moves, 1) if f.moves else None,
        reply_time_s=f.reply_time_s,
        game_time_s=summary.wall_s,
        material=mat,
        material_balance=mine - theirs,
        quality=quality,
    )
