"""One chess game between the agent and an opponent, with llm_chess's per-ply limits.

The game is plain state plus rules; the tools (tools.py) and the loop's stop rule
(runner.py) are thin adapters over it. A ply here is one half-move; "this turn"
means the agent's current ply, which ends when it plays a legal move.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import chess
import chess.pgn
from pydantic import BaseModel, ConfigDict, Field

from evals.chess.opponents import Opponent

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


class GameRules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    max_plies: int = Field(200, ge=1, description="the game is drawn once this many plies were played")
    max_failed_moves: int = Field(3, ge=1, description="illegal, invalid or ambiguous moves per turn before a forfeit")
    max_replies: int = Field(10, ge=1, description="model replies per turn before a forfeit")
    allow_resign: bool = Field(True, description="offer the resign tool")
    evaluation_depth: int | None = Field(
        None,
        ge=1,
        description="offer evaluate_move, Stockfish's score of the position after a move at this depth (an "
        "analysis task, not a fair game); none: not offered",
    )


@dataclass(frozen=True)
class Ending:
    termination: str  # checkmate, stalemate, ..., max_plies, resignation, forfeit_*, aborted
    winner: chess.Color | None  # None: a draw, or no result (aborted)
    message: str


@dataclass(frozen=True)
class MoveAttempt:
    ok: bool
    text: str  # what the agent is told
    later_calls: str  # why later calls of the same reply are not run


def color_name(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """UCI (e2e4) first, then SAN (Nf3). Raises python-chess's Invalid/Illegal/AmbiguousMoveError."""
    text = text.strip()
    try:
        move = board.parse_uci(text.lower())
    except chess.InvalidMoveError:
        return board.parse_san(text)
    if not move:  # parse_uci accepts the null move 0000; in a game it is no move at all
        raise chess.InvalidMoveError(f"the null move {text!r} is not a move")
    return move


def material(board: chess.Board) -> dict[str, int]:
    return {
        color_name(c): sum(v * len(board.pieces(p, c)) for p, v in PIECE_VALUES.items())
        for c in (chess.WHITE, chess.BLACK)
    }


class Game:
    def __init__(self, player: chess.Color, opponent: Opponent, rules: GameRules, start_fen: str | None = None):
        self.board = chess.Board(start_fen) if start_fen else chess.Board()
        self.start_fen = self.board.fen()
        self.player = player
        self.opponent = opponent
        self.rules = rules
        self.failed_moves = 0  # this turn
        self.replies = 0  # this turn, not counting the reply under way
        self.moved_in_reply = False
        self.ending: Ending | None = None

    # --- what the agent sees -------------------------------------------------

    def describe(self) -> str:
        b = self.board
        lines = [
            f"You play {color_name(self.player)}. Ply {len(b.move_stack) + 1}, move {b.fullmove_number}, "
            f"{color_name(b.turn)} to move."
        ]
        last = self.last_opponent_move()
        lines.append(f"Opponent's last move: {last}" if last else "Opponent's last move: none yet")
        if b.is_check() and self.ending is None:
            lines.append(f"{color_name(b.turn).capitalize()} is in check.")
        if self.ending is not None:
            lines.append(f"The game is over: {self.ending.message}")
        lines.append(f"FEN: {b.fen()}")
        lines.append(ascii_board(b, self.player))
        return "\n".join(lines)

    def state_line(self) -> str:
        """The position in one line: what a run_code program's account ends with."""
        last = self.last_opponent_move()
        over = f" The game is over: {self.ending.message}" if self.ending is not None else ""
        return (
            f"ply {len(self.board.move_stack) + 1}, {color_name(self.board.turn)} to move, opponent's last move "
            f"{last or 'none yet'}; FEN {self.board.fen()}.{over}"
        )

    def legal_moves_text(self) -> str:
        return ",".join(sorted(m.uci() for m in self.board.legal_moves))

    def last_opponent_move(self) -> str | None:
        """SAN and UCI of the opponent's newest move, if any."""
        b = self.board.copy()
        while b.move_stack:
            move = b.pop()
            if b.turn != self.player:
                return f"{b.san(move)} ({move.uci()})"
        return None

    # --- what the agent does -------------------------------------------------

    def open(self) -> None:
        """The opponent moves first when it has the move."""
        if self.board.turn != self.player and self.ending is None:
            self._opponent_moves()

    def try_move(self, text: str) -> MoveAttempt:
        b = self.board
        if b.turn != self.player:  # the opponent's last move failed (its engine raised): it still owes one
            self._opponent_moves()
        try:
            move = parse_move(b, text)
        except chess.AmbiguousMoveError:
            return self._failed(
                "Ambiguous",
                f"{text!r} fits more than one legal move; name the piece's file or rank (Nbd2) or use UCI (b1d2).",
            )
        except chess.IllegalMoveError:
            return self._failed("Illegal", f"{text!r} is not a legal move here; get_legal_moves lists the legal ones.")
        except chess.InvalidMoveError:
            return self._failed("Invalid", f"{text!r} is not a move in UCI (e2e4) or SAN (Nf3) notation.")
        san = b.san(move)
        b.push(move)
        self.failed_moves = 0
        self.moved_in_reply = True
        said = f"You played {san} ({move.uci()})."
        ending = self._check_end()
        if ending is not None:
            return MoveAttempt(True, f"{said} {ending.message} The game is over.", "Not run: the game is over.")
        reply = self._opponent_moves()
        said += f" The opponent replied {reply}."
        if self.ending is not None:
            return MoveAttempt(True, f"{said} {self.ending.message} The game is over.", "Not run: the game is over.")
        later = (
            f"Not run: your move {move.uci()} was played and the opponent has already replied ({reply}), so this "
            "call was planned for a board that no longer exists. Read the board again (get_board) before the next move."
        )
        return MoveAttempt(True, f"{said} Your move.", later)

    def resign(self) -> Ending:
        return self._end("resignation", not self.player, f"{color_name(self.player).capitalize()} resigned.")

    def end_of_reply(self) -> None:
        """Called once per model reply: counts replies this turn and forfeits past the limit."""
        if self.moved_in_reply:
            self.replies, self.moved_in_reply = 0, False
            return
        self.replies += 1
        if self.ending is None and self.replies >= self.rules.max_replies:
            self._end(
                "forfeit_replies",
                not self.player,
                f"{self.replies} replies without a legal move this turn (limit {self.rules.max_replies}): "
                f"{color_name(self.player)} forfeits.",
            )

    def abort(self, why: str) -> None:
        """The run stopped for a reason outside the game (a budget, a model error)."""
        if self.ending is None:
            self.ending = Ending("aborted", None, f"The game was not finished: {why}.")

    # --- the record ----------------------------------------------------------

    def result(self) -> str:
        if self.ending is None or self.ending.termination == "aborted":
            return "*"
        if self.ending.winner is None:
            return "1/2-1/2"
        return "1-0" if self.ending.winner == chess.WHITE else "0-1"

    def player_result(self) -> str:
        if self.ending is None or self.ending.termination == "aborted":
            return "aborted"
        if self.ending.winner is None:
            return "draw"
        return "win" if self.ending.winner == self.player else "loss"

    def pgn(self, player_name: str) -> str:
        game = chess.pgn.Game.from_board(self.board)
        names = {self.player: player_name, not self.player: self.opponent.name}
        game.headers["Event"] = "harness chess"
        game.headers["White"], game.headers["Black"] = names[chess.WHITE], names[chess.BLACK]
        game.headers["Result"] = self.result()
        if self.ending is not None:
            game.headers["Termination"] = self.ending.termination
        out = io.StringIO()
        print(game, file=out, end="\n")
        return out.getvalue()

    # --- internals -----------------------------------------------------------

    def _failed(self, kind: str, detail: str) -> MoveAttempt:
        self.failed_moves += 1
        left = self.rules.max_failed_moves - self.failed_moves
        text = f"{kind} move: {detail} Current position (FEN): {self.board.fen()}."
        if left <= 0:
            ending = self._end(
                "forfeit_wrong_moves",
                not self.player,
                f"{self.failed_moves} failed moves this turn (limit {self.rules.max_failed_moves}): "
                f"{color_name(self.player)} forfeits.",
            )
            text += f" {ending.message} The game is over."
        else:
            text += f" {left} failed move{'s' if left != 1 else ''} left this turn."
        later = "Not run: only the first make_move of a reply is tried; it failed and the board did not change. Send one move per reply."
        return MoveAttempt(False, text, later)

    def _opponent_moves(self) -> str:
        move = self.opponent.choose(self.board)
        san = self.board.san(move)
        self.board.push(move)
        self._check_end()
        return f"{san} ({move.uci()})"

    def _check_end(self) -> Ending | None:
        outcome = self.board.outcome()  # without claims: checkmate, stalemate, material, 75 moves, fivefold
        if outcome is not None:
            term = outcome.termination.name.lower()
            who = f"{color_name(outcome.winner).capitalize()} wins" if outcome.winner is not None else "Draw"
            self._end(term, outcome.winner, f"{term.replace('_', ' ').capitalize()}: {who}.")
        elif len(self.board.move_stack) >= self.rules.max_plies:
            self._end("max_plies", None, f"Draw: the game reached the {self.rules.max_plies}-ply cap.")
        return self.ending

    def _end(self, termination: str, winner: chess.Color | None, message: str) -> Ending:
        """The game's ending: this one, unless it was over already."""
        if self.ending is None:
            self.ending = Ending(termination, winner, message)
        return self.ending


def ascii_board(board: chess.Board, pov: chess.Color) -> str:
    """Ranks and files labelled, from the player's side; uppercase is white, '.' is empty."""
    ranks = range(7, -1, -1) if pov == chess.WHITE else range(8)
    files = range(8) if pov == chess.WHITE else range(7, -1, -1)
    header = "  " + " ".join(chess.FILE_NAMES[f] for f in files)
    rows = [header]
    for r in ranks:
        cells = []
        for f in files:
            piece = board.piece_at(chess.square(f, r))
            cells.append(piece.symbol() if piece else ".")
        rows.append(f"{r + 1} {' '.join(cells)} {r + 1}")
    rows.append(header)
    return "\n".join(rows)
