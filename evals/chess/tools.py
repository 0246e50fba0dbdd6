"""The four tools an agent plays chess with: get_board, get_legal_moves, make_move, resign; and, for analysis
tasks (GameRules.evaluation_depth), evaluate_move, which scores a move with the engine without playing it.

Reads are free; make_move and resign are writes, so under first_write_wins the
first of them in a reply runs and every later call is rejected with the game's
own explanation (the opponent has already replied; read the board again).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evals.chess.analysis import Evaluator
from evals.chess.game import Game, parse_move
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult

OVER = "The game is over; no more moves can be made."


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MoveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    move: str = Field(description="Your move in UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5) notation.")


def chess_tools(game: Game, evaluator: Evaluator | None = None) -> Registry:
    """The game's tools; with an `evaluator`, evaluate_move too."""

    def get_board(args: NoArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(game.describe())

    def get_legal_moves(args: NoArgs, ctx: ToolContext) -> ToolResult:
        if game.ending is not None:
            return ToolResult(OVER, ok=False, domain_error=True)
        return ToolResult(f"Legal moves (UCI): {game.legal_moves_text()}")

    def make_move(args: MoveArgs, ctx: ToolContext) -> ToolResult:
        if game.ending is not None:
            return ToolResult(OVER, ok=False, domain_error=True, rejects_later=OVER)
        attempt = game.try_move(args.move)
        # A wrong move is the model's mistake within the rules: shown as an error,
        # never counted toward the harness's consecutive-failure backstop.
        return ToolResult(attempt.text, ok=attempt.ok, domain_error=not attempt.ok, rejects_later=attempt.later_calls)

    def legal_moves_schema() -> dict:
        legal = sorted(m.uci() for m in game.board.legal_moves) or ["0000"]
        return {
            "type": "object",
            "properties": {"move": {"type": "string", "enum": legal}},
            "required": ["move"],
            "additionalProperties": False,
        }

    def evaluate_move(args: MoveArgs, ctx: ToolContext) -> ToolResult:
        assert evaluator is not None
        if game.ending is not None:
            return ToolResult(OVER, ok=False, domain_error=True)
        try:
            move = parse_move(game.board, args.move)
        except ValueError:  # python-chess's invalid, illegal and ambiguous moves
            return ToolResult(f"{args.move!r} is not a legal move here.", ok=False, domain_error=True)
        after = game.board.copy()
        san = after.san(move)
        after.push(move)
        score = evaluator.score(after, game.player)
        return ToolResult(f"{san} ({move.uci()}): {score:+d} centipawns for you at depth {evaluator.depth}.")

    def resign(args: NoArgs, ctx: ToolContext) -> ToolResult:
        if game.ending is not None:
            return ToolResult(OVER, ok=False, domain_error=True, rejects_later=OVER)
        ending = game.resign()
        return ToolResult(f"{ending.message} The game is over.", rejects_later="Not run: the game is over.")

    tools = [
        Tool(
            "get_board",
            "Show the position.",
            "Show the current position: FEN, an ASCII board from your side, whose move it is and the opponent's last move.",
            NoArgs,
            Effect.READ,
            get_board,
        ),
        Tool(
            "get_legal_moves",
            "List the legal moves.",
            "List every legal move in the current position, in UCI notation.",
            NoArgs,
            Effect.READ,
            get_legal_moves,
        ),
        Tool(
            "make_move",
            "Play your move.",
            "Play one move in UCI (e2e4) or SAN (Nf3). The opponent replies at once, so only the first make_move of a "
            "reply is played; read the board again before the next one.",
            MoveArgs,
            Effect.WRITE,
            make_move,
            constraint=legal_moves_schema,
        ),
        Tool(
            "resign", "Resign the game.", "Give up the game; it ends at once as a loss.", NoArgs, Effect.WRITE, resign
        ),
    ]
    if evaluator is not None:
        tools.append(
            Tool(
                "evaluate_move",
                "Score a move with the engine.",
                "Score one legal move without playing it: the engine's evaluation of the position after it, in "
                "centipawns from your side (positive is good for you; a forced mate counts as 1000).",
                MoveArgs,
                Effect.READ,
                evaluate_move,
            )
        )
    offered = [t for t in tools if t.name != "resign" or game.rules.allow_resign]
    return Registry.of(offered, world=game.state_line)
