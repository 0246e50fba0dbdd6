"""Holds: a session's prefix kept ahead of LRU while its client runs a tool, until the hold expires,
the session comes back, or running requests need the memory; and what /metrics says of them."""

from __future__ import annotations

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Engine, EngineConfig, InvalidRequestError, ModelConfig, ReturnHint, SamplingParams, dummy_checkpoint
from engine.kv_cache import BlockPool
from engine.radix import RadixCache
from tests.engine.serving import metrics, running_server


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _tree(num_blocks=8, block_size=2):
    pool, clock = BlockPool(num_blocks), Clock()
    return pool, RadixCache(pool, block_size, clock), clock


def _cache(tree, pool, tokens):
    """A finished request's blocks handed to the tree, as the scheduler does."""
    pool.free(tree.insert(tokens, pool.allocate(len(tokens) // tree.block_size)))


def test_a_held_prefix_outlives_younger_unheld_ones_and_counts_as_a_saved_hit():
    pool, tree, clock = _tree(num_blocks=6)
    agent, other, newer = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    _cache(tree, pool, agent)
    assert tree.hold("agent", agent, 30.0) == 2 and tree.num_held == 2
    _cache(tree, pool, other)
    _cache(tree, pool, newer)
    assert tree.evict(2) == 2  # plain LRU would take the agent's blocks, the oldest
    assert len(tree.match(agent)) == 2 and tree.match(other) == []
    assert tree.count_hits(tree.match(agent)) == 2 and tree.num_saved_hits == 2
    assert tree.count_hits(tree.match(agent)) == 0  # counted once per eviction that spared it


def test_an_expired_hold_is_plain_lru_again():
    pool, tree, clock = _tree(num_blocks=4)
    agent, other = [1, 2, 3, 4], [5, 6, 7, 8]
    _cache(tree, pool, agent)
    tree.hold("agent", agent, 30.0)
    _cache(tree, pool, other)
    clock.now = 30.0
    tree.expire()
    assert tree.num_held == 0 and tree.holds == {}
    assert tree.evict(2) == 2 and tree.match(agent) == [] and tree.num_held_evicted == 0


def test_held_blocks_go_only_when_nothing_else_can_the_earliest_deadline_first():
    pool, tree, clock = _tree(num_blocks=6)
    early, late, free = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    _cache(tree, pool, late)
    tree.hold("late", late, 20.0)
    _cache(tree, pool, early)
    tree.hold("early", early, 10.0)
    _cache(tree, pool, free)
    assert tree.evict(4) == 4
    assert tree.match(free) == [] and tree.match(early) == [] and len(tree.match(late)) == 2
    assert tree.num_held_evicted == 2 and tree.num_held == 2
    tree.release("early")  # its evicted path is released without touching the counts again
    assert tree.num_held == 2 and tree.holds.keys() == {"late"}


def test_a_session_whose_next_request_is_queued_is_held_last_and_never_expires():
    pool, tree, clock = _tree(num_blocks=4)
    queued, away = [1, 2, 3, 4], [5, 6, 7, 8]
    _cache(tree, pool, queued)
    tree.hold("queued", queued, 5.0)
    _cache(tree, pool, away)
    tree.hold("away", away, 60.0)
    tree.arrived("queued")
    clock.now = 30.0
    tree.expire()
    assert tree.holds.keys() == {"queued", "away"}
    assert tree.evict(2) == 2 and tree.match(away) == [] and len(tree.match(queued)) == 2


def test_among_queued_sessions_the_one_queued_last_loses_its_blocks_first():
    """The engine admits in arrival order: the session queued last needs its blocks last, whatever
    their age (LRU would take the first-queued's, cached earlier)."""
    pool, tree, clock = _tree(num_blocks=6)
    first, last, away = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    for name, tokens in (("first", first), ("last", last), ("away", away)):
        _cache(tree, pool, tokens)
        tree.hold(name, tokens, 60.0)
    tree.arrived("first")
    tree.arrived("last")
    assert tree.evict(2) == 2 and tree.match(away) == []  # away: back behind both
    assert tree.evict(2) == 2 and tree.match(last) == [] and len(tree.match(first)) == 2
    assert tree.num_held == 2 and tree.num_held_evicted == 4 and tree.num_queued_evicted == 2


def test_sessions_sharing_a_prefix_hold_it_until_the_last_lets_go():
    pool, tree, clock = _tree(num_blocks=8)
    a, b = [1, 2, 3, 4], [1, 2, 5, 6]
    _cache(tree, pool, a)
    _cache(tree, pool, b)
    tree.hold("a", a, 30.0)
    tree.hold("b", b, 30.0)
    assert tree.num_held == 3  # the shared block once
    tree.release("a")
    assert tree.num_held == 2
    tree.hold("b", [1, 2], 30.0)  # a session's new hold replaces its old one
    assert tree.num_held == 1
    assert tree.clear() == 3 and tree.holds == {} and tree.num_held == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.integers(1, 6)), min_size=1, max_size=60))
def test_random_holds_keep_blocks_owned_once_and_the_counts_true(ops):
    pool, tree, clock = _tree(num_blocks=12, block_size=1)
    for op, who, n in ops:
        tokens = [who, *range(10 * who, 10 * who + n)]
        if op <= 1:  # a request, as the scheduler admits one: its matched prefix locked while blocks are freed
            path = tree.match(tokens)
            tree.lock(path)
            own = len(tokens) - len(path)
            if pool.num_free < own:
                tree.evict(own - pool.num_free)
            if pool.num_free >= own:
                table = [node.block for node in path] + pool.allocate(own)
                pool.free(tree.insert(tokens, table))
            tree.unlock(path)
        elif op == 2:
            tree.hold(f"s{who}", tokens, float(n))
        elif op == 3:
            tree.release(f"s{who}")
        elif op == 4:
            clock.now += n
            tree.expire()
        elif op == 5:
            tree.arrived(f"s{who}")
        else:
            unheld = [x for x in tree._iter_nodes() if not x.children and not x.held]
            freed = tree.evict(n)
            if unheld:
                assert freed >= min(n, len(unheld))
        nodes = list(tree._iter_nodes())
        assert sorted([*pool._free, *(x.block for x in nodes)]) == list(range(12))
        assert tree.num_held == sum(1 for x in nodes if x.held)
        assert all(x.held for x in nodes if x.queued)
        for x in nodes:  # a hold covers a path from the root
            if x.held and x.parent is not tree.root:
                assert x.parent is not None and x.parent.held


GREEDY = SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
TINY = ModelConfig(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
    max_position_embeddings=2048,
)  # fmt: skip
TOKEN_BYTES = TINY.kv_bytes_per_token()


@pytest.fixture(scope="module")
def tiny():
    return dummy_checkpoint(TINY, seed=5)


def _engine(checkpoint, blocks: int) -> Engine:
    return Engine(checkpoint, EngineConfig(kv_cache_bytes=blocks * 16 * TOKEN_BYTES, max_num_batched_tokens=1024))


def _prompt(seed: int, n: int) -> list[int]:
    return [1 + (seed * 7919 + i * 31) % 500 for i in range(n)]


@pytest.mark.parametrize("held", [False, True])
def test_an_agent_back_from_its_tool_finds_its_prefix_only_when_it_said_it_would_return(tiny, held):
    """100 blocks: the agent's 40-block prompt, another session's 40, then one of 60 that needs 40
    evicted. Under LRU they are the agent's, the oldest; held, the other session's go instead."""
    eng = _engine(tiny, 100)
    try:
        agent = _prompt(0, 640)
        hint = ReturnHint("agent-1", 60.0) if held else None
        eng.generate([agent], GREEDY, hint=hint)
        eng.generate([_prompt(1, 640)], GREEDY)
        eng.generate([_prompt(2, 944)], GREEDY)
        out = eng.generate([agent + _prompt(9, 40)], GREEDY, hint=hint)[0]
        st = eng.stats()
        if held:
            assert out.usage.cached_tokens == 640 and st["saved_hit_blocks"] == 40
            assert st["held_sessions"] == 1 and st["held_blocks"] == 42  # held again after this turn
        else:
            assert out.usage.cached_tokens == 0 and st["held_blocks"] == 0
        assert st["preemptions"] == 0
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks and eng.radix.num_locked == 0
    finally:
        eng.shutdown()


def test_a_running_request_takes_held_blocks_rather_than_be_preempted(tiny):
    eng = _engine(tiny, 64)
    try:
        for seed in range(3):
            eng.generate([_prompt(seed, 320)], GREEDY, hint=ReturnHint(f"agent-{seed}", 600.0))
        assert eng.stats()["held_blocks"] == 60
        long = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)
        out = eng.generate([_prompt(7, 800)], long)[0]
        st = eng.stats()
        assert out.finish_reason == "length" and st["preemptions"] == 0
        assert st["held_evicted_blocks"] > 0 and st["held_blocks"] < 60
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks
    finally:
        eng.shutdown()


def test_a_hint_is_checked_at_submission(tiny):
    eng = _engine(tiny, 8)
    try:
        for bad in (ReturnHint("", 10.0), ReturnHint("s", 0.0), ReturnHint("s", float("nan")), ReturnHint("s", 1e9)):
            with pytest.raises(InvalidRequestError, match="return hint"):
                eng.submit([1, 2, 3], GREEDY, hint=bad)
    finally:
        eng.shutdown()


def test_metrics_show_held_blocks_sessions_and_saved_hits_over_http(checkpoint):
    eng = Engine(checkpoint, EngineConfig(kv_cache_bytes=64 << 20))
    try:
        with running_server(eng) as url:
            headers = {"X-Harness-Session": "run-1", "X-Harness-Return-Within": "60"}
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", default_headers=headers)
            ask = [{"role": "user", "content": "List three prime numbers. " * 20}]
            client.chat.completions.create(model="smollm2", messages=ask, max_tokens=4, temperature=0)
            m = metrics(httpx.get(f"{url}/metrics").text)
            assert m["engine_sessions_held"] == 1 and m["engine_kv_blocks_held"] > 0
            assert m["engine_kv_blocks_held_evicted_total"] == 0 and m["engine_cache_hits_saved_tokens_total"] == 0
            bad = httpx.post(
                f"{url}/v1/chat/completions",
                json={"model": "smollm2", "messages": ask, "max_tokens": 2},
                headers={"X-Harness-Session": "run-2", "X-Harness-Return-Within": "soon"},
            )
            assert bad.status_code == 400 and "x-harness-return-within" in bad.json()["error"]["message"]
            plain = httpx.post(
                f"{url}/v1/chat/completions",
                json={"model": "smollm2", "messages": ask, "max_tokens": 2},
                headers={"X-Harness-Session": "run-3"},  # a session without a return hint holds nothing
            )
            assert plain.status_code == 200
            assert metrics(httpx.get(f"{url}/metrics").text)["engine_sessions_held"] == 1
    finally:
        eng.shutdown()
