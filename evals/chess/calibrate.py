"""The opponent ladder on one Elo scale: Stockfish's `UCI_Elo` points as anchors, the skill levels, the
random mover and the rungs between them placed by games among themselves, rated jointly (elo.fit_ladder).

Every Stockfish on the ladder searches a fixed number of nodes a move (NODES), not a time, so the table
holds on any machine; a rating against the ladder is a rating against these node-limited engines. The
random mover loses every game to skill 0, so it is joined to the ladder through Stockfish skill 0 playing
a share of its moves at random (`random=0.75`, `0.5`, `0.25` by default; the shipped table adds 0.9
and 0.6).

The table ships as data (calibration.json): the Stockfish version, the command, seed and date of each
calibration run that played its games (a run can add games to an earlier table: `--add-to`), every game,
and each player's rating with its interval, fitted over all the games.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import chess
from pydantic import BaseModel, ValidationError

from agent.journal.store import write_json_atomic
from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file
from evals.chess.elo import Rating, fit_ladder
from evals.chess.opponents import ELO_MAX, ELO_MIN, open_opponent, stockfish_version

NODES = 5_000  # a move; at 5,000 nodes a game between the strongest rungs takes a few seconds
TABLE = Path(__file__).with_name("calibration.json")
RANDOM_SHARES = (0.75, 0.5, 0.25)
MAX_PLIES = 200  # as a harness game: a draw at the cap


class Rung(BaseModel):
    """One opponent on the ladder: its spec (what `--opponent` takes) and, for an anchor, its fixed Elo."""

    spec: str
    nominal: float  # where it is expected to lie: only to choose whom it plays
    anchor: float | None = None


class CalibrationGame(BaseModel):
    white: str
    black: str
    score: float  # white's: 1, 0.5, 0
    seed: int  # white's generator gets seed, black's seed + 1
    plies: int
    termination: str


class Placed(BaseModel):
    spec: str
    anchor: bool
    rating: Rating


class CalibrationRun(BaseModel):
    command: str
    seed: int
    date: str
    games: int


class Calibration(BaseModel):
    stockfish: str  # the engine's `id name`
    nodes: int
    runs: list[CalibrationRun]
    players: list[Placed]
    games: list[CalibrationGame]

    def ladder(self) -> list[tuple[str, float]]:
        """The opponents with a point Elo (not a bound), weakest first: what a rating is measured against."""
        rated = [(p.spec, p.rating.elo) for p in self.players if p.rating.elo is not None]
        return sorted(((s, e) for s, e in rated if e is not None), key=lambda x: x[1])

    def elo_of(self, spec: str) -> float | None:
        return next((p.rating.elo for p in self.players if p.spec == spec), None)


def skill_nominal(level: float) -> float:
    """The UCI_Elo Stockfish 15.1 maps to a skill level (the inverse of its own formula)."""
    return 1346.6 + 143.4 * level**0.806


def rungs(
    skills: Sequence[int] = range(21),
    anchors: Sequence[int] = range(ELO_MIN, ELO_MAX + 1, 150),
    weak: bool = True,
    nodes: int = NODES,
    shares: Sequence[float] = RANDOM_SHARES,
) -> list[Rung]:
    """The ladder: anchors at their UCI_Elo, skill levels, and (with `weak`) the random mover and its rungs."""
    out = [Rung(spec=f"stockfish:elo={e},nodes={nodes}", nominal=e, anchor=e) for e in anchors]
    # Skill 20 is full strength at these nodes, above the top anchor by its own formula's reckoning.
    out += [Rung(spec=f"stockfish:skill={k},nodes={nodes}", nominal=skill_nominal(k) + 300 * (k == 20)) for k in skills]
    if weak:
        out += [Rung(spec=f"stockfish:skill=0,random={p:g},nodes={nodes}", nominal=ELO_MIN - 600 * p) for p in shares]
        out.append(Rung(spec="random", nominal=ELO_MIN - 600))
    return sorted(out, key=lambda r: r.nominal)


def pairings(ladder: Sequence[Rung], neighbours: int) -> list[tuple[Rung, Rung]]:
    """Each free rung against its `neighbours` nearest rungs by nominal Elo; two anchors never meet (their
    game tells the fit nothing)."""
    pairs: dict[tuple[str, str], tuple[Rung, Rung]] = {}
    for rung in ladder:
        if rung.anchor is not None:
            continue
        others = sorted((r for r in ladder if r.spec != rung.spec), key=lambda r: abs(r.nominal - rung.nominal))
        for other in others[:neighbours]:
            a, b = sorted((rung, other), key=lambda r: r.nominal)
            pairs.setdefault((a.spec, b.spec), (a, b))
    return list(pairs.values())


def play_engines(white: str, black: str, seed: int) -> CalibrationGame:
    """One game between two opponents, with no agent: a ply cap and the standard endings, as a harness game."""
    engines = {chess.WHITE: open_opponent(white, seed), chess.BLACK: open_opponent(black, seed + 1)}
    board = chess.Board()
    try:
        while board.outcome() is None and len(board.move_stack) < MAX_PLIES:
            board.push(engines[board.turn].choose(board))
    finally:
        for e in engines.values():
            e.close()
    outcome = board.outcome()
    score = 0.5 if outcome is None or outcome.winner is None else float(outcome.winner == chess.WHITE)
    term = outcome.termination.name.lower() if outcome is not None else "max_plies"
    return CalibrationGame(
        white=white, black=black, score=score, seed=seed, plies=len(board.move_stack), termination=term
    )


def calibrate(
    ladder: Sequence[Rung],
    games_per_pair: int,
    seed: int,
    command: str,
    neighbours: int = 3,
    workers: int = 1,
    on_game: Callable[[int, int, CalibrationGame], None] | None = None,
    earlier: Calibration | None = None,
) -> Calibration:
    """Play the pairings (colours alternating within a pair; game k gets seed `seed + 2k`) and fit the ladder,
    over these games and those of an `earlier` table (same Stockfish and nodes) when there is one."""
    jobs = [
        (a.spec, b.spec) if j % 2 == 0 else (b.spec, a.spec)
        for a, b in pairings(ladder, neighbours)
        for j in range(games_per_pair)
    ]
    if not jobs:
        raise HarnessError("The ladder has no free rung to place: give it skill levels or the random mover.")
    version = stockfish_version()
    nodes = {int(r.spec.rsplit("nodes=", 1)[1]) for r in ladder if "nodes=" in r.spec}
    if len(nodes) > 1:
        raise HarnessError(f"The ladder mixes node limits ({sorted(nodes)}); a table holds one.")
    node_count = nodes.pop() if nodes else NODES
    if earlier is not None and (earlier.stockfish, earlier.nodes) != (version, node_count):
        raise HarnessError(
            f"The table to add to was made with {earlier.stockfish} at {earlier.nodes} nodes a move, and this "
            f"calibration plays {version} at {node_count}: games of the two do not fit on one scale."
        )
    done: list[CalibrationGame] = []

    def one(k: int) -> CalibrationGame:
        game = play_engines(*jobs[k], seed + 2 * k)
        done.append(game)
        if on_game is not None:
            on_game(len(done), len(jobs), game)
        return game

    with ThreadPoolExecutor(max_workers=workers) as pool:  # the work is in the engines' processes
        played = list(pool.map(one, range(len(jobs))))
    run = CalibrationRun(
        command=command, seed=seed, date=datetime.now(UTC).isoformat(timespec="seconds"), games=len(played)
    )
    everything = (earlier.games if earlier is not None else []) + played
    anchors = {r.spec: r.anchor for r in ladder if r.anchor is not None}
    if earlier is not None:
        anchors |= {p.spec: p.rating.elo for p in earlier.players if p.anchor and p.rating.elo is not None}
    fit = fit_ladder([(g.white, g.black, g.score) for g in everything], anchors)
    players = [Placed(spec=s, anchor=s in anchors, rating=r) for s, r in fit.items()]
    return Calibration(
        stockfish=version,
        nodes=node_count,
        runs=(earlier.runs if earlier is not None else []) + [run],
        players=sorted(players, key=lambda p: where(p.rating)),
        games=everything,
    )


def where(r: Rating) -> float:
    """A rating's place in the table's order: its point, else its bound; unplaced players first."""
    for value in (r.elo, r.high, r.low):
        if value is not None:
            return value
    return -math.inf


def save(calibration: Calibration, path: Path) -> None:
    write_json_atomic(path, calibration.model_dump(mode="json"))


def load(path: Path = TABLE, version: str | None = None) -> Calibration:
    """The table at `path`; with `version` (the Stockfish in use), a table made with another is refused."""
    if not path.is_file():
        raise HarnessError(f"No calibration table at {path}. Make one with `harness chess calibrate --out {path}`.")
    try:
        table = Calibration.model_validate_json(read_text_file(path, "calibration table"))
    except ValidationError as e:
        raise HarnessError(
            describe_validation_error(e, f"The calibration table {path}")
            + f" Make one with `harness chess calibrate --out {path}`."
        ) from None
    if version is not None and version != table.stockfish:
        raise HarnessError(
            f"The calibration table {path} was made with {table.stockfish}, and the Stockfish here is {version}: "
            "its ratings do not hold for this engine. Make a table for it with `harness chess calibrate`."
        )
    return table
