"""The Elo difference between two rated chess batches (harness chess --rate), beside the paired comparison.

A rated batch chooses each opponent from its own results, so two of them rarely share a game to pair:
the difference is taken between the two ratings, from every game's score against its opponent's
calibrated Elo, with the profile-likelihood interval of the difference (evals.chess.elo.difference).
"""

from __future__ import annotations

import json
from pathlib import Path


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
    return said + f"; B − A {d.elo:+.0f} (95% CI {d.low:+.0f} to {d.high:+.0f})."
