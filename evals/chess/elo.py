"""Elo ratings by maximum likelihood: one player against opponents of known Elo, or a whole ladder at once.

The model is the logistic one Elo itself uses: a player rated r scores E = 1 / (1 + 10^((q − r)/400)) on
average against one rated q, and a game's score s (1, ½, 0) adds s·ln E + (1 − s)·ln(1 − E) to the
log-likelihood, so a draw counts as half a win and half a loss.

A player's 95% interval is the profile-likelihood one: the ratings whose log-likelihood lies within
χ²₁(0.95)/2 = 1.92 of the maximum. It is used instead of the Fisher (Wald) interval because a few games
leave the likelihood skewed (a player who scored 9 of 10 is far likelier to be much stronger than much
weaker), which the symmetric Wald interval hides; on one rating the profile costs only two root searches.
When every game was won (or lost) the likelihood has no maximum: the estimate is a bound alone, the rating
below which (above which) winning (losing) every game had less than a 5% chance.

The ladder fit (Bradley–Terry with some players' Elo fixed) uses Newton's method on the free ratings, and
each free rating's interval comes from the inverse of the observed Fisher information: with twenty-odd free
players a profile per player would mean refitting the rest at every trial point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel

SCALE = 400 / math.log(10)  # Elo points per natural-log unit of the odds
HALF_CHI2 = 1.920729  # χ²₁(0.95) / 2: the profile-likelihood drop of a 95% interval
ALL_OR_NOTHING = math.log(0.05)  # the log-probability of every game going one way, at a 95% bound
SPAN = 4000.0  # how far from the opponents a root is looked for


class Rating(BaseModel):
    """A rating with its 95% interval; with every game won, `low` alone; with every game lost, `high` alone."""

    elo: float | None
    low: float | None
    high: float | None
    games: int

    def line(self) -> str:
        if self.elo is not None and self.low is not None and self.high is not None:
            return f"{self.elo:.0f} (95% CI {self.low:.0f} to {self.high:.0f}, {self.games} games)"
        if self.low is not None:
            return f"> {self.low:.0f} (every game won; 95% bound, {self.games} games)"
        if self.high is not None:
            return f"< {self.high:.0f} (every game lost; 95% bound, {self.games} games)"
        return "— (not placed: no games against rated players)" if self.games else "— (no games)"

    @property
    def width(self) -> float:
        return self.high - self.low if self.low is not None and self.high is not None else math.inf


def expected(r: float, q: float) -> float:
    """The mean score of a player rated r against one rated q."""
    return 1.0 / (1.0 + 10.0 ** ((q - r) / 400.0))


def log_likelihood(r: float, results: Sequence[tuple[float, float]]) -> float:
    """`results`: (opponent's Elo, score) pairs."""
    total = 0.0
    for q, s in results:
        x = (r - q) / SCALE  # ln E = −log1p(e^−x), stable far from the opponent too
        total -= s * math.log1p(math.exp(-x)) if s else 0.0
        total -= (1 - s) * math.log1p(math.exp(x)) if s < 1 else 0.0
    return total


def fisher_information(r: float, opponents: Iterable[float]) -> float:
    """What one game each against `opponents` tells about a rating r, per Elo point squared."""
    return sum(expected(r, q) * (1 - expected(r, q)) for q in opponents) / SCALE**2


def root(f, low: float, high: float) -> float:
    """A root of an increasing (or decreasing) f on [low, high] by bisection: f is monotone wherever it is used."""
    f_low = f(low)
    for _ in range(100):
        mid = (low + high) / 2
        if (f(mid) > 0) == (f_low > 0):
            low, f_low = mid, f(mid)
        else:
            high = mid
        if high - low < 1e-6:
            break
    return (low + high) / 2


def rate(results: Sequence[tuple[float, float]]) -> Rating:
    """The maximum-likelihood Elo of a player from (opponent's Elo, score) pairs, with its 95% interval."""
    n = len(results)
    if not n:
        return Rating(elo=None, low=None, high=None, games=0)
    points = sum(s for _, s in results)
    lo, hi = min(q for q, _ in results) - SPAN, max(q for q, _ in results) + SPAN
    if points == n:
        bound = root(lambda r: log_likelihood(r, results) - ALL_OR_NOTHING, lo, hi)
        return Rating(elo=None, low=round(bound, 1), high=None, games=n)
    if points == 0:
        bound = root(lambda r: log_likelihood(r, results) - ALL_OR_NOTHING, lo, hi)
        return Rating(elo=None, low=None, high=round(bound, 1), games=n)
    # The score equation Σ (s − E) = 0 is decreasing in r: one root, the maximum.
    best = root(lambda r: sum(s - expected(r, q) for q, s in results), lo, hi)
    top = log_likelihood(best, results)
    drop = lambda r: log_likelihood(r, results) - top + HALF_CHI2  # noqa: E731
    return Rating(elo=round(best, 1), low=round(root(drop, lo, best), 1), high=round(root(drop, best, hi), 1), games=n)


def difference(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> Rating | None:
    """B's Elo minus A's from each one's (opponent's Elo, score) pairs, with the profile-likelihood 95% interval
    of the difference (A's rating maximized out at each trial difference). None when either side won or lost
    every game: with one rating only a bound, the difference has no finite maximum either."""
    ra, rb = rate(a), rate(b)
    if ra.elo is None or rb.elo is None:
        return None
    lo, hi = -2 * SPAN, 2 * SPAN
    both = list(a) + list(b)
    span = (min(q for q, _ in both) - SPAN, max(q for q, _ in both) + SPAN)

    def profile(d: float) -> float:
        # for a fixed difference the score equation in A's rating is decreasing: one root, the maximum
        score = lambda r: sum(s - expected(r, q) for q, s in a) + sum(s - expected(r + d, q) for q, s in b)  # noqa: E731
        r = root(score, *span)
        return log_likelihood(r, a) + log_likelihood(r + d, b)

    best = rb.elo - ra.elo  # the two ratings separate in the likelihood, so the joint maximum is theirs
    top = profile(best)
    drop = lambda d: profile(d) - top + HALF_CHI2  # noqa: E731
    return Rating(
        elo=round(best, 1),
        low=round(root(drop, lo, best), 1),
        high=round(root(drop, best, hi), 1),
        games=len(a) + len(b),
    )


def fit_ladder(games: Sequence[tuple[str, str, float]], anchors: Mapping[str, float]) -> dict[str, Rating]:
    """Bradley–Terry by maximum likelihood: `games` are (white, black, white's score); `anchors` keep their Elo.

    The maximum is finite only for the free players joined to the anchors both ways: each has scored against
    some path to an anchor and been scored against along another. A player (or group) that won (lost) every
    game against the rest has its maximum at infinity: it is left out of the joint fit (at that limit its
    games tell nothing about the others) and gets a bound (or an estimate) from its games against the
    players placed.
    """
    names = sorted({p for w, b, _ in games for p in (w, b)})
    placed = joined(games, anchors)
    free = [p for p in names if p not in anchors and p in placed]
    kept = [g for g in games if g[0] in placed and g[1] in placed]
    out = {p: Rating(elo=a, low=a, high=a, games=played(p, games)) for p, a in anchors.items() if p in names}
    out |= {p: r.model_copy(update={"games": played(p, games)}) for p, r in newton(kept, anchors, free).items()}
    known = {p: r.elo for p, r in out.items() if r.elo is not None}
    for p in names:
        if p not in out:
            results = [(known[o], s) for o, s in player_results(p, games) if o in known]
            out[p] = rate(results).model_copy(update={"games": played(p, games)})
    return out


def joined(games: Sequence[tuple[str, str, float]], anchors: Mapping[str, float]) -> set[str]:
    """The players in the anchors' strongly connected part of the graph `p → q: p scored against q`, the
    anchors taken as one node (their ratings are fixed, so they are joined to each other already)."""
    node = lambda p: "" if p in anchors else p  # noqa: E731
    scored: dict[str, set[str]] = {}
    conceded: dict[str, set[str]] = {}
    for w, b, s in games:
        for p, q, points in ((w, b, s), (b, w, 1 - s)):
            if points > 0:
                scored.setdefault(node(p), set()).add(node(q))
                conceded.setdefault(node(q), set()).add(node(p))

    def reach(edges: dict[str, set[str]]) -> set[str]:
        seen, todo = {""}, [""]
        while todo:
            for q in edges.get(todo.pop(), ()):
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        return seen

    both = reach(scored) & reach(conceded)
    return {p for w, b, _ in games for p in (w, b) if node(p) in both}


def player_results(player: str, games: Sequence[tuple[str, str, float]]) -> list[tuple[str, float]]:
    """(opponent, the player's score) for each game the player played."""
    return [(b, s) for w, b, s in games if w == player] + [(w, 1 - s) for w, b, s in games if b == player]


def played(player: str, games: Sequence[tuple[str, str, float]]) -> int:
    return sum(player in (w, b) for w, b, _ in games)


def newton(
    games: Sequence[tuple[str, str, float]], anchors: Mapping[str, float], free: Sequence[str]
) -> dict[str, Rating]:
    """The joint maximum for the free players, with Wald intervals from the inverse observed information."""
    if not free:
        return {}
    index = {p: i for i, p in enumerate(free)}
    r = np.zeros(len(free)) + (np.mean(list(anchors.values())) if anchors else 0.0)

    def elo(p: str) -> float:
        return anchors[p] if p in anchors else float(r[index[p]])

    for _ in range(100):
        grad, hess = np.zeros(len(free)), np.zeros((len(free), len(free)))
        for w, b, s in games:
            e = expected(elo(w), elo(b))
            g, h = (s - e) / SCALE, e * (1 - e) / SCALE**2
            for p, sign in ((w, 1), (b, -1)):
                if p in index:
                    grad[index[p]] += sign * g
                    hess[index[p], index[p]] += h
            if w in index and b in index:
                hess[index[w], index[b]] -= h
                hess[index[b], index[w]] -= h
        if not anchors:  # without an anchor the scale floats: pin the mean at 0 by a tiny ridge
            hess += 1e-9
        step = np.linalg.solve(hess, grad)
        step = np.clip(step, -400, 400)  # far from the maximum a full Newton step can overshoot
        r += step
        if np.max(np.abs(step)) < 1e-4:
            break
    cov = np.linalg.inv(hess)
    half = 1.959964 * np.sqrt(np.diag(cov))
    return {
        p: Rating(
            elo=round(float(r[i]), 1),
            low=round(float(r[i] - half[i]), 1),
            high=round(float(r[i] + half[i]), 1),
            games=played(p, games),
        )
        for p, i in index.items()
    }
