"""Scripted chess players: ModelClients that decide each reply from the messages they are sent.

They stand in for a model in tests, demos and benchmarks. Each reads the FEN from
the get_board observation at the end of its prompt (or asks for the board when
there is none), and picks a seeded random legal move, or (`EnginePlayer`) the move
an opponent engine would play: a player of known strength for rating checks. `PlannedPlayer` follows a
plan of replies first, to act out mistakes: illegal, invalid and ambiguous moves,
two moves in one reply, replies without a tool call.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

import chess

from agent.models import load_model
from agent.models.base import ModelClient
from agent.models.spec import model_name
from core.errors import HarnessError
from core.policy import ModelParams
from core.types import Message, ModelReply, Reasoning, ToolCall, Usage
from evals.chess.calibrate import NODES
from evals.chess.metrics import message_chars
from evals.chess.opponents import Opponent, check_spec, open_opponent, parse_stockfish
from tools.base import Tool


def board_in_view(messages: Sequence[Message]) -> chess.Board | None:
    """The board from a get_board result among the newest tool messages, if any."""
    for m in reversed(messages):
        if m.role != "tool":
            return None
        if m.name == "get_board":
            for line in m.text.splitlines():
                if line.startswith("FEN: "):
                    return chess.Board(line[len("FEN: ") :])
    return None


class RandomPlayer:
    """get_board, then a random legal move; optionally with long reasoning on every reply."""

    def __init__(self, seed: int | None = 0, reasoning_chars: int = 0, name: str = "player:random"):
        self.name = name
        self.rng = random.Random(seed)
        self.thought_rng = random.Random(seed)  # apart, so the moves do not depend on how much it thinks
        self.reasoning_chars = reasoning_chars
        self.calls = 0

    def close(self) -> None:
        """Nothing to free; a player that runs an engine stops it here."""

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        self.calls += 1
        board = board_in_view(messages)
        calls = self.decide(board)
        ids = tuple(ToolCall(id=f"call_{self.calls}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls))
        message = Message(role="assistant", tool_calls=ids, reasoning=self.think(board))
        return ModelReply(
            message=message,
            usage=usage(messages, message),
            finish_reason="tool_calls" if ids else "stop",
            model=self.name,
        )

    def decide(self, board: chess.Board | None) -> list[tuple[str, str]]:
        if board is None or board.is_game_over():
            return [call("get_board")]
        return [call("make_move", move=self.random_move(board))]

    def random_move(self, board: chess.Board) -> str:
        return self.rng.choice(sorted(m.uci() for m in board.legal_moves))

    def think(self, board: chess.Board | None) -> Reasoning | None:
        """Filler as long as a reasoning model's thoughts, so context policies have something to strip."""
        if not self.reasoning_chars:
            return None
        seen = board.fen() if board is not None else "no board yet"
        parts = [f"Reply {self.calls}. Position: {seen}."]
        moves = sorted(m.uci() for m in board.legal_moves) if board is not None else ["e2e4", "d2d4", "g1f3"]
        while sum(len(p) + 1 for p in parts) < self.reasoning_chars:
            move = self.thought_rng.choice(moves)
            parts.append(f"If I play {move}, the opponent may answer in several ways; weigh the threats and material.")
        return Reasoning(text=" ".join(parts)[: self.reasoning_chars])


class EnginePlayer(RandomPlayer):
    """get_board, then the move an opponent engine (e.g. `stockfish:elo=1800`) plays in that position, through
    make_move like any agent. The engine starts at the first move and stops when the player is closed."""

    def __init__(self, engine: str, seed: int | None = 0, name: str = "player:stockfish"):
        super().__init__(seed, name=name)
        self.engine_spec = check_spec(engine)
        # Apart from the opponent's generator, which gets the game's seed itself: the same seed on both sides
        # of a game between equals would push both towards the same weaker moves.
        self.engine_seed = None if seed is None else seed + 1_000_003
        self.engine: Opponent | None = None

    def decide(self, board: chess.Board | None) -> list[tuple[str, str]]:
        if board is None or board.is_game_over():
            return [call("get_board")]
        if self.engine is None:
            self.engine = open_opponent(self.engine_spec, self.engine_seed)
        return [call("make_move", move=self.engine.choose(board).uci())]

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


class PlannedPlayer(RandomPlayer):
    """Replies from a plan, then plays on as a RandomPlayer (or stays silent).

    Each planned reply is a list of actions: `board`, `legal`, `random` (a random
    legal move on the board in view), `resign`, `bad_json`, `unknown_tool`, or
    `move:TEXT` (make_move with that text). An empty list is a reply with no call.
    """

    def __init__(
        self, plan: Sequence[Sequence[str]], seed: int | None = 0, then: str = "random", name: str = "player:planned"
    ):
        super().__init__(seed, name=name)
        self.plan = [list(r) for r in plan]
        self.then = then

    def decide(self, board: chess.Board | None) -> list[tuple[str, str]]:
        if self.calls > len(self.plan):
            return [] if self.then == "silent" else super().decide(board)
        return [self.act(a, board) for a in self.plan[self.calls - 1]]

    def act(self, action: str, board: chess.Board | None) -> tuple[str, str]:
        if action.startswith("move:"):
            return call("make_move", move=action[len("move:") :])
        if action == "random":
            if board is None:
                raise ValueError("the plan asks for a random move before the board was read")
            return call("make_move", move=self.random_move(board))
        simple = {
            "board": call("get_board"),
            "legal": call("get_legal_moves"),
            "resign": call("resign"),
            "bad_json": ("make_move", '{"move": '),
            "unknown_tool": call("teleport"),
        }
        if action not in simple:
            raise ValueError(f"unknown planned action {action!r}")
        return simple[action]


def call(name: str, **args: str) -> tuple[str, str]:
    return name, json.dumps(args)


def usage(prompt: Sequence[Message], reply: Message) -> Usage:
    """Estimated from characters, reasoning included, so stripping it shows in the token figures."""
    reasoning = len(reply.reasoning.text) if reply.reasoning else 0
    return Usage(
        prompt_tokens=sum(tokens(message_chars(m)) + 4 for m in prompt),
        completion_tokens=tokens(message_chars(reply)),
        reasoning_tokens=tokens(reasoning),
    )


def tokens(chars: int) -> int:
    """Four characters a token, as agent.models.base.estimate_tokens counts."""
    return (chars + 3) // 4


@dataclass(frozen=True)
class ModelMaker:
    """A batch's model from its string: a scripted player (`player:...`) or a model string, a fresh client for
    each game (the local engine's is a view of the engine the batch shares: agent/models/shared.py). It pickles,
    so Ray tasks make their own."""

    spec: str

    @property
    def name(self) -> str:
        """The model's name, without loading it."""
        return load_player(self.spec, 0).name if self.spec.startswith("player:") else model_name(self.spec)

    def __call__(self, seed: int) -> ModelClient:
        return load_player(self.spec, seed) if self.spec.startswith("player:") else load_model(self.spec)


def load_player(spec: str, seed: int | None) -> RandomPlayer:
    """`player:random`, `player:reasoning[=CHARS]` (default 2000), `player:silent`, or
    `player:stockfish[:elo=1800,...]` (an opponent spec; the ladder's nodes a move unless it names a limit)."""
    engine = spec.removeprefix("player:")
    if engine.partition(":")[0] == "stockfish":
        limited = parse_stockfish(engine)
        if limited.depth is None and limited.nodes is None and limited.time is None:
            engine += f"{',' if ':' in engine else ':'}nodes={NODES}"
        return EnginePlayer(engine, seed, name=spec)
    name, _, value = engine.partition("=")
    if name == "random":
        return RandomPlayer(seed)
    if name == "reasoning":
        chars = int(value) if value.isdigit() else 2000
        return RandomPlayer(seed, reasoning_chars=chars, name=f"player:reasoning={chars}")
    if name == "silent":
        return PlannedPlayer([], seed, then="silent", name="player:silent")
    raise HarnessError(
        f"Unknown scripted player {spec!r}; choose player:random, player:reasoning[=CHARS], player:silent or "
        "player:stockfish[:elo=1350..2850,...]."
    )
