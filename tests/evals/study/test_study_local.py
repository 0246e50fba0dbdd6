"""`harness study` with the real embedded model on the in-process engine: chess against the real
Stockfish and a bundled coding task, 2 policies × 2 tasks × 2 seeds, 4 runs in flight, kept short: 2 steps a
run, 2 plies a game, 2 replies a turn, 64 tokens a reply (the engine's figures need requests, not long ones)."""

from __future__ import annotations

import json

import pytest

from tests.evals.study.conftest import study

pytestmark = pytest.mark.model


def test_the_embedded_model_study_reports_the_engines_own_figures(tmp_path):
    code, output, folder = study(
        tmp_path / "out",
        "--model",
        "local",
        "--task",
        "chess",
        "--task",
        "ledger",
        "--policy",
        "local",
        "--policy",
        "local_compact",
        "--seeds",
        "0,1",
        "--concurrency",
        "4",
        "--kv-cache-mb",
        "64",
        "--max-steps",
        "2",
        "--max-plies",
        "2",
        "--max-replies",
        "2",
        "--max-tokens",
        "64",
        "--sandbox",
        "local",
    )
    assert code == 0, output
    [point] = json.loads((folder / "study.json").read_text())["points"]
    assert point["cache_tokens"] and point["cache_tokens"] > 1000  # 64 MiB of KV blocks, as the engine counted them
    for figures in point["policies"]:
        assert figures["runs"] == 4
        assert figures["engine"]["source"] == "engine stats"
        assert figures["engine"]["evicted_blocks"] is not None and figures["engine"]["engine_steps"] > 0
        assert 0 < figures["cached_share"] < 1  # later requests of a run reuse its cached prefix
        assert figures["ttft_p50_s"] is not None and figures["ttft_p95_s"] >= figures["ttft_p50_s"]
        assert figures["peak_context"] > 0 and figures["tokens_per_s"] > 0
    for run in point["runs"]:  # --max-steps 2 and --max-replies 2 (one move a game) held, and --max-tokens 64
        assert 0 < run["steps"] <= 2 and run["completion_tokens"] <= 64 * run["steps"], run
    [pair] = point["pairs"]
    assert pair["comparison"]["pairs"] == 4
    assert {r["task_id"] for r in point["runs"]} == {
        "ledger",
        "chess-white-vs-stockfish:skill=0",
        "chess-black-vs-stockfish:skill=0",
    }
