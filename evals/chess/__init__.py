"""Chess games against an engine: tools, per-ply rules, opponents, per-game records and batches.

from evals.chess import play_game, play_batch
played = play_game(model, "stockfish:skill=0", "white")   # any ModelClient
played.record.termination, played.run_dir / "artifacts/game.pgn"
"""

from evals.chess.batch import ChessBatchSpec, play_batch
from evals.chess.game import GameRules
from evals.chess.runner import GameRecord, play_game

__all__ = ["ChessBatchSpec", "GameRecord", "GameRules", "play_batch", "play_game"]
