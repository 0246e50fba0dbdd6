"""The study's replica grid without Ray: its points and labels, the load imbalance, the counters of a
replica set's merged /metrics page, and the errors a user can meet."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.server.merged_metrics import merge
from evals.study.grid import StudySpec, settings
from evals.study.measure import load_imbalance
from evals.study.target import counters_of
from tests.evals.study.conftest import study

POLICIES = ("--policy", "local_long", "--policy", "local_compact")


def replica_page(prompt: int, cached: int, evicted: int) -> str:
    """One engine's /metrics, as far as a study reads it."""
    return (
        "# HELP engine_prompt_tokens Prompt tokens, cached ones included\n# TYPE engine_prompt_tokens counter\n"
        f"engine_prompt_tokens_total {prompt}\n"
        "# HELP engine_cached_tokens Cached prompt tokens\n# TYPE engine_cached_tokens counter\n"
        f"engine_cached_tokens_total {cached}\n"
        "# HELP engine_kv_blocks_evicted KV blocks evicted\n# TYPE engine_kv_blocks_evicted counter\n"
        f"engine_kv_blocks_evicted_total {evicted}\n"
        "# HELP engine_kv_cache_tokens Tokens the KV cache holds\n# TYPE engine_kv_cache_tokens gauge\n"
        "engine_kv_cache_tokens 4096\n"
    )


def test_one_engine_has_no_router_and_each_replicas_count_runs_every_router():
    spec = StudySpec(
        model="local",
        tasks=["ledger"],
        policies=["local_long", "local_compact"],
        concurrency=[4],
        kv_cache_mb=[64],
        replicas=[1, 2],
        routers=["round_robin", "session"],
    )
    points = settings(spec)
    assert [(p.replicas, p.router) for p in points] == [(1, None), (2, "round_robin"), (2, "session")]
    # one engine keeps the batch folders' names it always had
    assert [p.label for p in points] == ["c4-kv64", "r2-round_robin-c4-kv64", "r2-session-c4-kv64"]


def test_load_imbalance_is_the_busiest_replicas_prompt_tokens_over_the_mean_replicas():
    assert load_imbalance({"a": 500, "b": 500}) == 1.0
    assert load_imbalance({"a": 300, "b": 100}) == 1.5
    assert load_imbalance({"a": 0, "b": 800}) == 2.0  # one of two took everything
    assert load_imbalance({"a": 10, "b": 0, "c": 0, "d": 0}) == 4.0
    assert load_imbalance({"a": 500}) is None  # one engine: nothing to balance
    assert load_imbalance(None) is None
    assert load_imbalance({"a": 0, "b": 0}) is None  # no load at all is neither balanced nor not


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.integers(0, 10**6), min_size=2, max_size=8))
def test_load_imbalance_lies_between_one_and_the_number_of_replicas(per_replica):
    value = load_imbalance(per_replica)
    if sum(per_replica.values()) == 0:
        assert value is None
    else:
        assert value is not None and 1.0 - 1e-9 <= value <= len(per_replica) + 1e-9


def test_a_merged_pages_counters_are_the_sums_and_each_replicas_prompt_tokens():
    page = merge({"r1": replica_page(3000, 2000, 4), "r2": replica_page(1000, 250, 1)})
    counters = counters_of(page)
    assert counters["prompt_tokens"] == 4000 and counters["cached_tokens"] == 2250  # not the last replica's
    assert counters["evicted_blocks"] == 5 and counters["cache_tokens"] == 8192
    assert counters["replica_prompt_tokens"] == {"r1": 3000, "r2": 1000}


def test_one_engines_page_has_no_replicas():
    assert "replica_prompt_tokens" not in counters_of(replica_page(10, 5, 0))


def test_replicas_for_a_served_model_are_refused_since_the_server_routes_itself(tmp_path):
    code, output, folder = study(
        tmp_path / "out",
        "--model",
        "openai-compatible:http://127.0.0.1:9/v1#m",
        "--task",
        "ledger",
        *POLICIES,
        "--replicas",
        "2",
        "--router",
        "session",
    )
    assert code == 2 and "harness serve --replicas N --router R" in output and "Leave them out" in output
    assert folder is None


def test_an_unknown_router_is_refused_before_anything_runs(tmp_path):
    code, output, folder = study(
        tmp_path / "out", "--task", "ledger", *POLICIES, "--replicas", "1,2", "--router", "prefix,nosuch"
    )
    assert code == 2 and "Unknown router 'nosuch'" in output and "round_robin" in output
    assert folder is None


def test_replicas_without_ray_importable_name_the_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed: `import ray` fails
    code, output, _ = study(tmp_path / "out", "--task", "ledger", *POLICIES, "--replicas", "2")
    assert code == 2 and "pip install 'harness[serve-replicas]'" in output
    with pytest.raises(Exception, match="serve-replicas"):
        StudySpec(model="local", tasks=["ledger"], policies=["a", "b"], replicas=[2])
