"""Reasoning stripping on a reasoning-heavy player: the same game, two context policies."""

from __future__ import annotations

import io
import json

import chess.pgn

from core.context_policy import StripReasoning
from core.policy import HarnessPolicy
from evals.chess.game import GameRules
from evals.chess.players import RandomPlayer
from evals.chess.runner import play_game

# Stockfish with only a depth limit and one thread plays the same moves every time,
# so with a seeded player both runs play the same game and differ only in their prompts.
OPPONENT = "stockfish:depth=1"


def play(tmp_path, context):
    player = RandomPlayer(seed=5, reasoning_chars=3000)
    return play_game(
        player,
        OPPONENT,
        "white",
        HarnessPolicy(context=context),
        tmp_path / str(len(context)),
        rules=GameRules(max_plies=40),
        analysis_depth=0,
    )


def moves(played) -> list:
    text = (played.run_dir / played.record.pgn).read_text()
    return list(chess.pgn.read_game(io.StringIO(text)).mainline_moves())


def test_stripping_reasoning_cuts_prompt_characters_per_move(tmp_path):
    stripped = play(tmp_path, [StripReasoning(keep="none")])
    kept = play(tmp_path, [])
    s, k = stripped.record, kept.record
    assert moves(stripped) == moves(kept) and s.moves == k.moves > 5
    # Reasoning dwarfs the board: every reply thinks 3,000 characters, a board is ~350.
    assert s.reasoning_chars == k.reasoning_chars == 3000 * s.replies
    assert s.reasoning_chars > 10 * s.board_observation_chars
    assert s.board_observation_chars == k.board_observation_chars
    # Kept reasoning is resent in every later prompt, so its prompts grow with the game.
    per_move = [
        json.loads((p.run_dir / "summary.json").read_text())["outcome"]["prompt_chars_per_move"]
        for p in (stripped, kept)
    ]
    assert per_move == [s.prompt_chars_per_move, k.prompt_chars_per_move]
    assert k.prompt_chars_per_move > 5 * s.prompt_chars_per_move
    assert k.prompt_chars - s.prompt_chars > s.reasoning_chars
    # The player's token estimate sees the same prompts.
    assert k.tokens["prompt"] > 5 * s.tokens["prompt"]
    assert k.tokens["completion"] == s.tokens["completion"]
