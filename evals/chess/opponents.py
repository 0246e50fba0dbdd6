"""Opponents the agent plays against: Stockfish at a chosen strength, or a random mover.

An opponent is named by a spec string:

    random                      a uniformly random legal move (seeded per game)
    stockfish                   full strength, 100,000 nodes a move
    stockfish:skill=0           weakened like Stockfish's `Skill Level` (0..20)
    stockfish:elo=1400,depth=5  weakened to an Elo (1350..2850), as Stockfish's `UCI_Elo`
    stockfish:nodes=2000        also: depth=, nodes=, time= (seconds a move), path=
    stockfish:skill=0,random=0.5  half its moves (seeded) uniformly random: the rungs between the random
                                mover and skill 0, which the random mover never scores against

Reproducibility: every opponent repeats its moves for a seed, so two batches with the same
seeds play the same games wherever the agent plays the same moves (an A/B pair is one game).
Stockfish's own `Skill Level` picks its weaker moves with a generator seeded from the clock, so
the weakening is done here instead, by the same rule (a multi-PV search to depth 1 + level,
then a seeded random push towards weaker moves). Only a `time=` limit makes Stockfish's moves
depend on the machine's speed.
"""

from __future__ import annotations

import math
import random
import shutil
from typing import Protocol

import chess
import chess.engine
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import HarnessError, describe_validation_error

STOCKFISH = "/usr/games/stockfish"
DEFAULT_NODES = 100_000  # about 0.1 s a move on one core, the same moves on any machine
PAWN = 100  # centipawns
WEAK_LINES = 4  # how many best lines a weakened Stockfish chooses among, as Stockfish's Skill Level
# Stockfish 15.1 refuses UCI_Elo outside this range.
ELO_MIN, ELO_MAX = 1350, 2850


class Opponent(Protocol):
    name: str

    def choose(self, board: chess.Board) -> chess.Move: ...

    def close(self) -> None: ...


class StockfishSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    skill: int | None = Field(None, ge=0, le=20, description="Skill Level")
    elo: int | None = Field(None, ge=ELO_MIN, le=ELO_MAX, description="UCI_Elo, with UCI_LimitStrength on")
    depth: int | None = Field(None, ge=1)
    nodes: int | None = Field(None, ge=1)
    time: float | None = Field(None, gt=0, description="seconds a move")
    random: float | None = Field(None, ge=0, le=1, description="share of moves played uniformly at random")
    path: str = STOCKFISH

    def limit(self) -> chess.engine.Limit:
        if self.depth is None and self.nodes is None and self.time is None:
            return chess.engine.Limit(nodes=DEFAULT_NODES)
        return chess.engine.Limit(depth=self.depth, nodes=self.nodes, time=self.time)

    def options(self) -> dict[str, int | bool]:
        return {"Threads": 1}  # one thread: deterministic for a fixed depth or node count

    def level(self) -> float:
        """Stockfish 15's skill level (0..20, fractional for an Elo); 20 is full strength."""
        if self.elo is not None:
            return min(20.0, max(0.0, ((self.elo - 1346.6) / 143.4) ** (1 / 0.806)))
        return float(self.skill) if self.skill is not None else 20.0


def weakened_choice(
    lines: list[chess.engine.InfoDict], level: float, rng: random.Random, turn: chess.Color
) -> chess.Move:
    """Stockfish's Skill::pick_best with a seeded generator: among the best lines, push each score up by a
    deterministic share of its gap to the best (more for weaker levels) plus a random share, take the highest."""
    scores = [info["score"].pov(turn).score(mate_score=100_000) for info in lines]
    weakness = 120 - 2 * level
    delta = min(scores[0] - scores[-1], PAWN)
    best, best_score = lines[0]["pv"][0], -math.inf
    for info, score in zip(lines, scores):
        push = (weakness * (scores[0] - score) + delta * rng.randrange(int(weakness))) / 128
        if score + push >= best_score:
            best, best_score = info["pv"][0], score + push
    return best


class StockfishOpponent:
    def __init__(self, spec: StockfishSpec, name: str, seed: int | None = 0):
        binary = shutil.which(spec.path)
        if binary is None:
            raise HarnessError(
                f"Stockfish is not at {spec.path}. Install it (apt-get install stockfish) or pass path=... in the opponent spec."
            )
        self.name = name
        self.spec = spec
        self.level = spec.level()
        self.rng = random.Random(seed)
        self.engine = chess.engine.SimpleEngine.popen_uci(binary)
        self.engine.configure(spec.options())

    def choose(self, board: chess.Board) -> chess.Move:
        if self.spec.random and self.rng.random() < self.spec.random:
            return self.rng.choice(sorted(board.legal_moves, key=lambda m: m.uci()))
        if self.level < 20:
            limit = self.spec.limit()
            depth = 1 + int(self.level) if limit.depth is None else min(limit.depth, 1 + int(self.level))
            lines = self.engine.analyse(
                board, chess.engine.Limit(depth=depth, nodes=limit.nodes, time=limit.time), multipv=WEAK_LINES
            )
            return weakened_choice(lines, self.level, self.rng, board.turn)
        move = self.engine.play(board, self.spec.limit()).move
        if move is None:
            raise RuntimeError(f"Stockfish returned no move in {board.fen()}")
        return move

    def close(self) -> None:
        self.engine.quit()


def stockfish_version(path: str = STOCKFISH) -> str:
    """The engine's own `id name`, e.g. `Stockfish 15.1`."""
    engine = StockfishOpponent(StockfishSpec(path=path), "stockfish", seed=0).engine
    try:
        return str(engine.id.get("name", "unknown"))
    finally:
        engine.quit()


class RandomOpponent:
    def __init__(self, seed: int | None, name: str = "random"):
        self.name = name
        self.rng = random.Random(seed)

    def choose(self, board: chess.Board) -> chess.Move:
        # Sorted so that a seed gives the same move whatever python-chess's generation order.
        return self.rng.choice(sorted(board.legal_moves, key=lambda m: m.uci()))

    def close(self) -> None:
        pass


def parse_stockfish(spec: str) -> StockfishSpec:
    """`stockfish:skill=0,depth=5` → StockfishSpec; errors name the bad part and the allowed values."""
    _, _, rest = spec.partition(":")
    fields: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not value:
            raise HarnessError(f"Opponent spec {spec!r}: {part!r} is not key=value (e.g. stockfish:skill=0,depth=5).")
        fields[key.strip()] = value.strip()
    try:
        return StockfishSpec.model_validate(fields)
    except ValidationError as e:
        known = "skill (0..20), elo (1350..2850), depth, nodes, time (seconds), random (0..1), path"
        raise HarnessError(describe_validation_error(e, f"Opponent spec {spec!r}") + f" Known keys: {known}.") from None


def check_spec(spec: str) -> str:
    """Validate an opponent spec without starting an engine; returns it unchanged."""
    kind = spec.partition(":")[0]
    if kind == "stockfish":
        parse_stockfish(spec)
    elif spec != "random":
        raise HarnessError(
            f"Unknown opponent {spec!r}. Use `random` or `stockfish[:key=value,...]`, e.g. stockfish:skill=0."
        )
    return spec


def open_opponent(spec: str, seed: int | None) -> Opponent:
    check_spec(spec)
    if spec == "random":
        return RandomOpponent(seed)
    return StockfishOpponent(parse_stockfish(spec), name=spec, seed=seed)
