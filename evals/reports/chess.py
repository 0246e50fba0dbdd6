"""The chess part of a run report: the final board, the moves with each of the agent's centipawn
losses, and the game record as a table. A run is a chess game when summary.json's outcome is a
game record (it names the PGN and how the game ended)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

BOARD_PX = 360


@dataclass(frozen=True)
class MoveCell:
    san: str
    agent: bool  # played by the agent, not the opponent
    cp_loss: int | None  # the agent's moves only, where the game was analysed
    kind: str | None  # inaccuracy, mistake, blunder


@dataclass(frozen=True)
class MoveRow:
    number: int
    white: MoveCell | None
    black: MoveCell | None


@dataclass(frozen=True)
class ChessView:
    board_svg: Markup  # python-chess's own SVG, inline
    moves: list[MoveRow]
    record: list[tuple[str, str]]
    pgn: str  # the PGN's path, relative to the report


def is_game(outcome: dict[str, Any]) -> bool:
    return "pgn" in outcome and "termination" in outcome and "player_result" in outcome


def chess_view(run_dir: Path, outcome: dict[str, Any], report_dir: Path) -> ChessView | None:
    """The game's view, or None when the run is not a chess game or its PGN is gone. `report_dir`: where the
    report lies (the run directory, or an --out folder), so the PGN's link works from there."""
    if not is_game(outcome) or not (run_dir / outcome["pgn"]).is_file():
        return None
    # python-chess comes with the chess extra; only chess runs need it
    import chess
    import chess.pgn
    import chess.svg

    with open(run_dir / outcome["pgn"], encoding="utf-8") as f:
        game = chess.pgn.read_game(f)
    if game is None:
        return None
    player = chess.WHITE if outcome.get("color") == "white" else chess.BLACK
    quality = outcome.get("quality") or {}
    losses = {m["ply"]: m for m in quality.get("moves", [])}
    board = game.board()
    rows: dict[int, dict[str, MoveCell]] = {}
    for move in game.mainline_moves():
        ply, side = board.ply() + 1, board.turn
        loss = losses.get(ply, {})
        cell = MoveCell(board.san(move), side == player, loss.get("cp_loss"), loss.get("kind"))
        rows.setdefault(board.fullmove_number, {})["white" if side == chess.WHITE else "black"] = cell
        board.push(move)
    last = board.peek() if board.move_stack else None
    svg = chess.svg.board(
        board,
        orientation=player,
        lastmove=last,
        size=BOARD_PX,
        check=board.king(board.turn) if board.is_check() else None,
    )
    moves = [MoveRow(n, r.get("white"), r.get("black")) for n, r in sorted(rows.items())]
    link = Path(os.path.relpath(run_dir / outcome["pgn"], report_dir)).as_posix()
    return ChessView(Markup(svg), moves, game_record(outcome), link)


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "—" if value is None else str(value)


def game_record(o: dict[str, Any]) -> list[tuple[str, str]]:
    """The record's figures as labelled rows, in the order a reader asks for them."""
    tokens = o.get("tokens") or {}
    material = o.get("material") or {}
    q = o.get("quality")
    tools = o.get("tool_calls") or {}
    rows = [
        ("result", f"{o.get('result', '*')}: {o.get('player_result', '?')} for the agent"),
        ("how it ended", o.get("message") or str(o.get("termination", "?")).replace("_", " ")),
        ("agent", f"{o.get('model', '?')}, playing {o.get('color', '?')}"),
        ("opponent", str(o.get("opponent", "?"))),
        ("seed", _count(o.get("seed"))),
        ("plies", f"{_count(o.get('plies'))} ({_count(o.get('moves'))} moves by the agent)"),
        (
            "wrong moves",
            f"{_count(o.get('wrong_moves'))} illegal or unparsable; {_count(o.get('wrong_actions'))} wrong actions",
        ),
        (
            "rejected",
            f"{_count(o.get('extra_moves_rejected'))} extra moves in one reply; {_count(o.get('rejected_calls'))} calls",
        ),
        ("replies", _count(o.get("replies"))),
        ("tool calls", ", ".join(f"{k} {v:,}" for k, v in tools.items()) or "none"),
        ("tokens", ", ".join(f"{k} {v:,}" for k, v in tokens.items())),
        (
            "prompt characters",
            f"{_count(o.get('prompt_chars'))} ({_count(o.get('prompt_chars_per_move'))} per move); "
            f"{_count(o.get('board_observation_chars'))} of board observations, "
            f"{_count(o.get('reasoning_chars'))} of reasoning",
        ),
        ("time", f"{o.get('reply_time_s', 0):,.1f} s in replies of {o.get('game_time_s', 0):,.1f} s"),
        (
            "material",
            f"white {material.get('white', '?')}, black {material.get('black', '?')} "
            f"(agent {o.get('material_balance', 0):+d})",
        ),
    ]
    if q:
        rows.append(
            (
                "move quality",
                f"average centipawn loss {_count(q.get('avg_cp_loss'))} over {q.get('analysed_moves', 0)} moves "
                f"(Stockfish depth {q.get('depth')}); inaccuracies {q.get('inaccuracies', 0)}, "
                f"mistakes {q.get('mistakes', 0)}, blunders {q.get('blunders', 0)}",
            )
        )
    else:
        rows.append(("move quality", "not analysed"))
    return rows


POINTS = {"win": 1.0, "draw": 0.5}  # a player's score in a game; anything else (a loss, a forfeit) is 0


def rated_batch(batch_dir: Path) -> dict | None:
    """A rated chess batch's batch.json (harness chess --rate); None for any other folder."""
    path = batch_dir / "batch.json"
    if not path.is_file():
        return None
    batch = json.loads(path.read_text(encoding="utf-8"))
    return batch if isinstance(batch, dict) and isinstance(batch.get("rating"), dict) else None


def game_scores(batch: dict) -> list[tuple[float, float]]:
    """(opponent's Elo, score) for each game of a rated batch."""
    return [
        (row["opponent_elo"], POINTS.get(row["record"]["player_result"], 0.0))
        for row in batch.get("games", [])
        if row.get("opponent_elo") is not None
    ]


def cost_per_game(batch: dict) -> float | None:
    """The games' mean cost; None unless every game's cost is known in full (a lower bound is no cost)."""
    games = batch.get("games", [])
    if not games or any(g.get("cost_usd") is None or g.get("unpriced_calls", 0) for g in games):
        return None
    return sum(g["cost_usd"] for g in games) / len(games)


@dataclass(frozen=True)
class BatchRating:
    """A chess batch's Elo (from a rated batch's batch.json) and its score against each opponent Elo."""

    line: str  # e.g. "1812 (95% CI 1690 to 1930, 40 games)", or a bound
    win_loss: str
    cost_per_game: str | None  # where every game's cost is known
    per_opponent: list[tuple[str, float]]  # ("1800 · 5 games", the mean score in %), weakest first


def batch_rating(batch_dir: Path) -> BatchRating | None:
    """None unless `batch_dir` holds a chess batch.json with a rating (harness chess --rate)."""
    batch = rated_batch(batch_dir)
    if batch is None:
        return None
    scores: dict[float, list[float]] = {}
    for elo, points in game_scores(batch):
        scores.setdefault(elo, []).append(points)
    cost = cost_per_game(batch)
    win_loss = batch["aggregate"]["win_loss"]
    return BatchRating(
        line=rating_line(batch["rating"]),
        win_loss=f"{win_loss['value']:.3f}" if win_loss.get("value") is not None else "—",
        cost_per_game=None if cost is None else f"${cost:.4f}",
        per_opponent=[
            (f"{elo:.0f} · {len(s)} game{'s' if len(s) > 1 else ''}", 100 * sum(s) / len(s))
            for elo, s in sorted(scores.items())
        ],
    )


def rating_line(r: dict[str, Any]) -> str:
    """As evals.chess.elo.Rating.line, from the JSON (this module runs without python-chess)."""
    if r.get("elo") is not None:
        return f"{r['elo']:.0f} (95% CI {r['low']:.0f} to {r['high']:.0f})"
    if r.get("low") is not None:
        return f"> {r['low']:.0f} (every game won)"
    if r.get("high") is not None:
        return f"< {r['high']:.0f} (every game lost)"
    return "—"
