"""The Elo difference between two rated chess batches (harness chess --rate), beside the paired comparison.

A rated batch chooses each opponent from its own results, so two of them rarely share a game to pair:
the difference is taken between the two ratings, from every game's score against its opponent's
calibrated Elo, with the profile-likelihood interval of the difference (evals.chess.elo.difference).
Where both batches' costs are known, each side's cost per game is given, and what B pays per game for
each Elo point it gains over A.
"""

from __future__ import annotations

from pathlib import Path

from agent.models.pricing import format_usd
from evals.reports.chess import cost_per_game, game_scores, rated_batch


def rated_results(batch_dir: Path) -> list[tuple[float, float]] | None:
    """(opponent's Elo, score) for each game of a rated batch; None for any other folder."""
    batch = rated_batch(batch_dir)
    return None if batch is None else game_scores(batch)


def elo_line(a_dir: Path, b_dir: Path) -> str | None:
    """`Elo B − A: …` when both folders are rated chess batches, else None."""
    from evals.chess.elo import difference, rate  # python-chess's extra: only rated chess batches get here

    batch_a, batch_b = rated_batch(a_dir), rated_batch(b_dir)
    if batch_a is None or batch_b is None:
        return None
    a, b = game_scores(batch_a), game_scores(batch_b)
    ra, rb = rate(a), rate(b)
    said = f"Elo: A {ra.line()}; B {rb.line()}"
    d = difference(a, b)
    if d is None or d.elo is None or d.low is None or d.high is None:
        return said + "; B − A has no interval while a side won or lost every game."
    said += f"; B − A {d.elo:+.0f} (95% CI {d.low:+.0f} to {d.high:+.0f})."
    ca, cb = cost_per_game(batch_a), cost_per_game(batch_b)
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
