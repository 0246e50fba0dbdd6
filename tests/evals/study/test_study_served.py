"""`harness study` against `harness serve` (a real subprocess) through the OpenAI client: the
engine's counters come from /metrics, read before and after each policy's runs, and the server's
prefix cache is reset before each policy. One short game a policy: 2 plies, 2 replies a turn."""

from __future__ import annotations

import json

from agent.journal.store import read_events
from tests.agent.models.harness_serve import server  # noqa: F401  (the fixture: a real `harness serve`)
from tests.evals.study.conftest import study


def test_a_served_engine_counts_each_policys_tokens_as_its_runs_do(server, tmp_path):  # noqa: F811
    code, output, folder = study(
        tmp_path / "out",
        "--model",
        f"openai-compatible:{server}/v1#smollm2",
        "--task",
        "chess",
        "--policy",
        "local",
        "--policy",
        "local_lean",
        "--seeds",
        "0",
        "--concurrency",
        "2",
        "--max-plies",
        "2",
        "--max-replies",
        "2",
    )
    assert code == 0, output
    [point] = json.loads((folder / "study.json").read_text())["points"]
    for figures in point["policies"]:
        engine = figures["engine"]
        assert engine["source"] == "/metrics"
        # policies run one after another, so each one's /metrics difference is its own runs' traffic
        assert engine["prompt_tokens"] == figures["prompt_tokens"] > 0
        assert engine["cached_tokens"] == figures["cached_tokens"]
        assert engine["engine_steps"] > 0
        assert engine["evicted_blocks"] >= 0  # read from /metrics (None, and a TypeError here, if not reported)
        # the server's `timings` carry its time to first token, which the request's own time includes
        assert 0 < figures["ttft_p50_s"] <= figures["latency_p50_s"]
        assert engine["cache_tokens"] > 0  # the server's cache size, from /metrics
    # each policy starts on a cold cache: the second one's first request is not served the first's prefixes
    local, lean = point["runs"]
    first = next(e for e in read_events(folder / lean["run_dir"]) if e.type == "model_replied")
    assert lean["policy"] == "local_lean" and first.reply.usage.cached_tokens == 0
    assert point["pairs"][0]["comparison"]["pairs"] == 1
