"""The context benchmark's replay against the real engine, on the first steps of a recorded trajectory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.recorded.engine_cache import cache_engine
from core.context_policy import Compact
from memory.tokens import TokenCounter

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "trajectories" / "click-bool-yes"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_context", ROOT / "benchmarks" / "bench_context.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_context"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.model  # the default model's tokenizer, read from its file
def test_the_engine_serves_an_append_only_prefix_and_agrees_with_the_ideal(bench):
    engine_of = cache_engine("dummy")
    new_engine, tokenizer = engine_of.new, engine_of.tokenizer
    counter = TokenCounter(tokenizer.encode, "engine")
    events = [e for e in read_events(FIXTURE) if e.step <= 12]
    rows = {}
    for policy, steps in {
        "append_only": [],
        "compact_cache_aware": [Compact(trigger_tokens=6000, keep_recent_steps=1)],
    }.items():
        engine = new_engine()
        try:
            rows[policy] = bench.replay("click", events, steps, policy, engine, tokenizer, counter)
        finally:
            engine.shutdown()
    append, folded = rows["append_only"], rows["compact_cache_aware"]
    assert append.requests == 12 and append.cached_share > 0.8
    # Block rounding only ever loses a little: the engine serves at most the ideal, and nearly all of it.
    for row in rows.values():
        assert row.ideal_reuse - 0.02 <= row.cached_share <= row.ideal_reuse
    assert folded.peak_context < append.peak_context and folded.summariser_prompt > 0
    assert folded.summariser_cached_share > 0.5  # the forked summary request extends the agent's cached prompt
