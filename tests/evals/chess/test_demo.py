"""`harness demo` end to end: the embedded local model against the real Stockfish, shortened."""

from __future__ import annotations

import io
import json

import chess.pgn
import pytest
from typer.testing import CliRunner

from cli.main import app

pytestmark = pytest.mark.model


def test_demo_plays_a_game_and_leaves_a_complete_run_directory(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--max-plies", "4", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [batch] = [p for p in tmp_path.iterdir() if p.is_dir()]
    [run_dir] = [p for p in batch.iterdir() if p.is_dir()]
    assert {"run.json", "events.jsonl", "summary.json"} <= {p.name for p in run_dir.iterdir()}
    summary = json.loads((run_dir / "summary.json").read_text())
    record = summary["outcome"]
    # Constrained decoding: every reply is a valid call and every move is legal.
    assert record["wrong_actions"] == 0 and record["wrong_moves"] == 0
    assert record["plies"] == 4 and record["termination"] == "max_plies"
    game = chess.pgn.read_game(io.StringIO((run_dir / record["pgn"]).read_text()))
    assert len(list(game.mainline_moves())) == 4
    assert summary["tokens"]["cached"] > 0  # later replies reuse the conversation's cached prefix
    assert "W / D / L" in result.output
