"""Batches through the API and through `harness chess`, against the real Stockfish."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from evals.chess.batch import ChessBatchSpec, play_batch
from evals.chess.game import GameRules
from evals.chess.players import PlannedPlayer, RandomPlayer


def test_a_batch_writes_every_game_and_the_aggregate(tmp_path):
    # Game 1 resigns at once, game 2 plays random moves to the ply cap: one loss, one draw.
    # (Stockfish with only a depth limit plays the same moves every time, so this never varies.)
    def make(seed):
        return PlannedPlayer([["resign"]], seed) if seed == 10 else RandomPlayer(seed)

    batch, folder = play_batch(
        ChessBatchSpec(
            2, make, "stockfish:depth=1", "white", out=tmp_path, seed=10, rules=GameRules(max_plies=6), analysis_depth=0
        )
    )
    saved = json.loads((folder / "batch.json").read_text())
    assert [g["record"]["player_result"] for g in saved["games"]] == ["loss", "draw"]
    for g in saved["games"]:
        assert (folder / g["run_dir"] / "summary.json").exists()
        assert (folder / g["run_dir"] / g["record"]["pgn"]).exists()
    a = batch.aggregate
    assert (a.games, a.wins, a.draws, a.losses, a.aborted) == (2, 0, 1, 1, 0)
    assert a.win_loss.value == ((0 - 1) / 2 + 1) / 2 == 0.25
    assert a.wrong_moves_per_1000_moves.value == 0 and a.completion_tokens_per_move.value > 0
    assert saved["aggregate"] == a.model_dump(mode="json")


def test_harness_chess_plays_a_batch_and_prints_the_table(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "chess",
            "--games",
            "2",
            "--model",
            "player:random",
            "--opponent",
            "stockfish:skill=0,depth=1",
            "--color",
            "alternate",
            "--out",
            str(tmp_path),
            "--max-plies",
            "30",
            "--analysis-depth",
            "4",
            "--seed",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "win_loss" in result.output and "wrong moves / 1000 moves" in result.output
    (folder,) = tmp_path.iterdir()
    saved = json.loads((folder / "batch.json").read_text())
    assert [g["record"]["color"] for g in saved["games"]] == ["white", "black"]
    assert [g["record"]["seed"] for g in saved["games"]] == [3, 4]
    assert all(g["record"]["quality"]["depth"] == 4 for g in saved["games"])
    a = saved["aggregate"]
    assert a["wins"] + a["draws"] + a["losses"] == 2


def test_harness_chess_explains_a_bad_opponent(tmp_path):
    result = CliRunner().invoke(
        app, ["chess", "--model", "player:random", "--opponent", "stockfish:elo=900", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2 and "1350" in result.output
    assert not any(tmp_path.iterdir())


def test_harness_chess_with_a_sandbox_plays_in_code_mode(tmp_path):
    # One program per turn: it reads the legal moves and plays the first; the move ends the program.
    program = "moves = get_legal_moves().split(': ', 1)[1].split(',')\nmake_move(move=moves[0].strip())\nprint('x')"
    reply = {"tool_calls": [{"name": "run_code", "arguments": {"code": program}}]}
    script = tmp_path / "program.json"
    script.write_text(json.dumps({"replies": [reply, reply]}))
    policy = str(Path(__file__).resolve().parents[3] / "evals" / "loops" / "policies" / "code.toml")
    args = ["chess", "--model", f"scripted:{script}", "--policy", policy, "--sandbox", "local", "--color", "white"]
    args += ["--opponent", "random", "--max-plies", "4", "--analysis-depth", "0", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    [run_dir] = [p.parent for p in (tmp_path / "out").glob("*/*/events.jsonl")]
    said = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    programs = [e["observation"]["text"] for e in said if e["type"] == "tool_observed"]
    assert len(programs) == 2 and all("stopped at its call to make_move" in p for p in programs)
    assert all("x\n" not in p.split("[")[0] for p in programs)  # nothing after the move ran
