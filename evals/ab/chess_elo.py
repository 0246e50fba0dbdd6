"""The Elo difference between two rated chess batches (harness chess --rate), beside the paired comparison.

A rated batch chooses each opponent from its own results, so two of them rarely share a game to pair:
the difference is taken between the two ratings, from every game's score against its opponent's
calibrated Elo, with the profile-likelihood interval of the difference (evals.chess.elo.difference).
Where both batches' costs are known, each side's cost per game is given, and what B pays per game for
each Elo point it gains over A.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.pricing import format_usd


def rated_results(batch_dir: Path) -> list[tuple[float, float]] | None:
    """(opponent's Elo, score) for each game of a rated batch; None for any other folder."""
    path = batch_dir / "batch.json"
    if not path.is_file():
        return None
    batch = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(batch, dict) or batch.get("rating") is None:
        return None
    return [
        (row["opponent_elo"], {"win": 1.0, "draw": 0.5}.get(row["record"]["player_result"], 0.0))
        for row in batch.get("games", [])
        if row.get("opponent_elo") is not None
    ]


def elo_line(a_dir: Path, b_dir: Path) -> str | None:
    """`Elo B − A: …` when both folders are rated chess batches, else None."""
    a, b = rated_results(a_dir), rated_results(b_dir)
    if a is None or b is None:
        return None
    from evals.chess.elo import difference, rate  # python-chess's extra: only chess batches get here

    ra, rb = rate(a), rate(b)
    said = f"Elo: A {ra.line()}; B {rb.line()}"
    d = difference(a, b)
    if d is None or d.elo is None or d.low is None or d.high is None:
        return said + "; B − A has no interval while a side won or lost every game."
    said += f"; B − A {d.elo:+.0f} (95% CI {d.low:+.0f} to {d.high:+.0f})."
    ca, cb = cost_per_game(a_dir, len(a)), cost_per_game(b_dir, len(b))
    if ca is None or cb is None:
        return said
    said += f" Cost per game: A {format_usd(ca)}, B {format_usd(cb)}"
    if round(d.elo) == 0:
        return said + "."
    return (
        said
        + f"; B − A {format_usd(abs(cb - ca))} {'more' if cb >= ca else 'less'} per game, "
        + (f"{format_usd(abs(cb - ca) / abs(d.elo))} per Elo point {'gained' if d.elo > 0 else 'lost'}.")
    )


def cost_per_game(batch_dir: Path, games: int) -> float | None:
    """The batch's cost over its games; None when any call of it had no known price."""
    cost = json.loads((batch_dir / "batch.json").read_text(encoding="utf-8")).get("cost") or {}
    if cost.get("cost_usd") is None or cost.get("unpriced_calls", 0) or not games:
        return None
    return cost["cost_usd"] / games
