"""Opponents the agent plays against: Stockfish at a chosen strength, or a random mover.

An opponent is named by a spec string:

    random                      a uniformly random legal move (seeded per game)
    stockfish                   full strength, 0.1 s a move
    stockfish:skill=0           Stockfish's weakest `Skill Level` (0..20)
    stockfish:elo=1400,depth=5  `UCI_LimitStrength` at an Elo (1350..2850 for Stockfish 15.1)
    stockfish:nodes=2000        also: depth=, nodes=, time= (seconds a move), path=

Reproducibility: the random mover and Stockfish with only depth/nodes limits
(one thread) repeat exactly for a seed. Stockfish's `Skill Level` and `UCI_Elo`
pick among moves with Stockfish's own time-seeded generator, so games against a
weakened Stockfish cannot be replayed move for move.
"""

from __future__ import annotations

import random
import shutil
from typing import Protocol

import chess
import chess.engine
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import HarnessError, describe_validation_error

STOCKFISH = "/usr/games/stockfish"
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
    path: str = STOCKFISH

    def limit(self) -> chess.engine.Limit:
        if self.depth is None and self.nodes is None and self.time is None:
            return chess.engine.Limit(time=0.1)
        return chess.engine.Limit(depth=self.depth, nodes=self.nodes, time=self.time)

    def options(self) -> dict[str, int | bool]:
        opts: dict[str, int | bool] = {"Threads": 1}  # one thread: deterministic for a fixed depth or node count
        if self.skill is not None:
            opts["Skill Level"] = self.skill
        if self.elo is not None:
            opts["UCI_LimitStrength"] = True
            opts["UCI_Elo"] = self.elo
        return opts


class StockfishOpponent:
    def __init__(self, spec: StockfishSpec, name: str):
        binary = shutil.which(spec.path)
        if binary is None:
            raise HarnessError(f"Stockfish is not at {spec.path}. Install it (apt-get install stockfish) or pass path=... in the opponent spec.")
        self.name = name
        self.spec = spec
        self.engine = chess.engine.SimpleEngine.popen_uci(binary)
        self.engine.configure(spec.options())

    def choose(self, board: chess.Board) -> chess.Move:
        move = self.engine.play(board, self.spec.limit()).move
        if move is None:
            raise RuntimeError(f"Stockfish returned no move in {board.fen()}")
        return move

    def close(self) -> None:
        self.engine.quit()


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
        known = "skill (0..20), elo (1350..2850), depth, nodes, time (seconds), path"
        raise HarnessError(describe_validation_error(e, f"Opponent spec {spec!r}") + f" Known keys: {known}.") from None


def check_spec(spec: str) -> str:
    """Validate an opponent spec without starting an engine; returns it unchanged."""
    kind = spec.partition(":")[0]
    if kind == "stockfish":
        parse_stockfish(spec)
    elif spec != "random":
        raise HarnessError(f"Unknown opponent {spec!r}. Use `random` or `stockfish[:key=value,...]`, e.g. stockfish:skill=0.")
    return spec


def open_opponent(spec: str, seed: int | None) -> Opponent:
    check_spec(spec)
    if spec == "random":
        return RandomOpponent(seed)
    return StockfishOpponent(parse_stockfish(spec), name=spec)
