"""The radix prefix cache: matching, locking, eviction, and what requests report."""

import random

from engine import SamplingParams
from engine.kv_cache import BlockPool
from engine.radix import RadixCache
from tests.engine.conftest import make_engine

GREEDY = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)


def _tree(num_blocks=8, block_size=4):
    pool = BlockPool(num_blocks)
    return pool, RadixCache(pool, block_size)


def test_match_is_block_floored_and_insert_hands_back_duplicates():
    pool, tree = _tree()
    tokens = list(range(10))  # two full blocks of 4, and 2 tokens left over
    blocks = pool.allocate(2)
    assert tree.insert(tokens, blocks) == []
    assert [n.block for n in tree.match(tokens)] == blocks
    assert len(tree.match(list(range(7)))) == 1  # 7 tokens: only one full block matches
    assert tree.match([99] + tokens) == []
    again = pool.allocate(2)
    assert tree.insert(tokens, again) == again  # already cached: caller frees its copies


def test_evict_frees_lru_unlocked_leaves_and_never_a_locked_path():
    pool, tree = _tree(num_blocks=6)
    a, b, c = list(range(0, 8)), list(range(100, 108)), list(range(200, 208))
    for toks in (a, b, c):
        tree.insert(toks, pool.allocate(2))
    assert pool.num_free == 0
    locked = tree.match(b)
    tree.lock(locked)
    tree.match(c)  # touch c: a is now the least recently used
    assert tree.evict(2) == 2
    assert tree.match(a) == [] and len(tree.match(c)) == 2
    assert tree.evict(100) == 2  # only c could go
    assert [n.block for n in tree.match(b)] == [n.block for n in locked]
    assert set(n.block for n in locked).isdisjoint(pool._free)
    tree.unlock(locked)
    assert tree.evict(100) == 2 and pool.num_free == 6


def test_random_operations_keep_every_block_owned_once():
    rng = random.Random(0)
    pool, tree = _tree(num_blocks=32, block_size=2)
    held = []
    for _ in range(300):
        op = rng.random()
        if op < 0.5:
            toks = [rng.randrange(3) for _ in range(rng.randrange(2, 12))]
            path = tree.match(toks)
            tree.lock(path)
            n_new = len(toks) // 2 - len(path)
            if pool.num_free < n_new:
                tree.evict(n_new - pool.num_free)
            if pool.num_free < n_new:
                tree.unlock(path)
                continue
            held.append((toks, path, pool.allocate(n_new)))
        elif held:
            toks, path, own = held.pop(rng.randrange(len(held)))
            table = [n.block for n in path] + own
            pool.free(tree.insert(toks, table))
            tree.unlock(path)
        # Invariant: free list, tree and running requests partition the blocks.
        in_tree = tree.cached_blocks()
        owned = [b for _, _, own in held for b in own]
        everything = list(pool._free) + list(in_tree) + owned
        assert sorted(everything) == list(range(32))
        for _, path, _ in held:
            assert all(n.lock_ref > 0 for n in path)


def test_second_request_with_a_1000_token_prefix_hits_the_cache(engine):
    prefix = engine.encode(" ".join(f"item {i} is number {i * 7 % 13};" for i in range(200)))[:1000]
    assert len(prefix) == 1000
    first = engine.generate([prefix + engine.encode(" First question?")], GREEDY)[0]
    second = engine.generate([prefix + engine.encode(" Another one!")], GREEDY)[0]
    assert second.usage.cached_tokens >= 992
    assert second.usage.prompt_tokens == 1000 + len(engine.encode(" Another one!"))
    # The next turn of a conversation hits the previous turn's prompt and reply.
    turn2 = prefix + engine.encode(" First question?") + first.token_ids + engine.encode(" Thanks.")
    third = engine.generate([turn2], GREEDY)[0]
    assert third.usage.cached_tokens >= (1000 + len(first.token_ids)) // 16 * 16 - 16


def test_cached_tokens_never_cover_the_whole_prompt(engine):
    prompt = engine.encode("word " * 64)[:64]  # exactly four blocks
    engine.generate([prompt], GREEDY)
    again = engine.generate([prompt], GREEDY)[0]
    assert again.usage.cached_tokens == 48  # the last block is recomputed: one token at least


def _workload(eng):
    rng = random.Random(1)
    shared = eng.encode("You are a careful assistant. " * 10)  # 60 tokens
    prompts = [shared + [rng.randrange(100, 40000) for _ in range(n)] for n in (7, 30, 52)]
    return prompts + [[rng.randrange(100, 40000) for _ in range(70)]]


def test_small_cache_evicts_and_preempts_without_changing_any_output(checkpoint, engine):
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)
    prompts = _workload(engine)
    expected = [o.token_ids for o in engine.generate(prompts, params)]  # ample cache: no preemption
    # 14 blocks of 16 tokens hold 224 tokens; the four requests need about 380 at once.
    small = make_engine(checkpoint, kv_cache_bytes=14 * 16 * 46080, max_num_batched_tokens=128)
    try:
        small.generate([prompts[0]], params)  # leaves the shared prefix cached, unlocked
        outs = small.generate(prompts, params)
        assert [o.token_ids for o in outs] == expected
        assert outs[1].usage.cached_tokens >= 48  # the shared prefix was still there at admission
        assert small.scheduler.total_preemptions > 0 and small.radix.num_evicted > 0
        assert any(o.num_preemptions > 0 for o in outs)
        assert sum(s.num_preempted for s in small.step_stats) == small.scheduler.total_preemptions
        # Nothing leaked: every block is free or cached, and no path is left locked.
        assert small.pool.num_free + small.radix.num_nodes == small.pool.num_blocks
        assert small.radix.num_locked == 0
        outs = small.generate(prompts[:2], params)  # still serving, same answers
        assert [o.token_ids for o in outs] == expected[:2]
    finally:
        small.shutdown()


def test_preempted_sampled_request_resumes_with_the_same_tokens(checkpoint, engine):
    params = [SamplingParams(temperature=0.8, top_p=0.9, seed=s, max_tokens=40, ignore_eos=True) for s in (1, 2)]
    prompts = [engine.encode("Tell me a story about a dragon."), engine.encode("Tell me a story about a robot.")]
    expected = [o.token_ids for o in engine.generate(prompts, params)]
    small = make_engine(checkpoint, kv_cache_bytes=5 * 16 * 46080)  # 80 tokens for two runs of ~48
    try:
        outs = small.generate(prompts, params)
        assert small.scheduler.total_preemptions > 0
        assert [o.token_ids for o in outs] == expected
    finally:
        small.shutdown()


def test_engine_without_prefix_cache_reports_no_cached_tokens(checkpoint):
    eng = make_engine(checkpoint, kv_cache_bytes=32 << 20, enable_prefix_cache=False)
    try:
        prompt = eng.encode("hello " * 40)
        eng.generate([prompt], GREEDY)
        out = eng.generate([prompt], GREEDY)[0]
        assert out.usage.cached_tokens == 0
        assert eng.pool.num_free == eng.pool.num_blocks
    finally:
        eng.shutdown()


def test_a_request_borrows_the_blocks_of_one_still_running(checkpoint, engine):
    import threading

    shared = engine.encode("You are a careful assistant who answers in one line. " * 12)[:96]  # six full blocks
    assert len(shared) == 96
    first_prompt, second_prompt = shared + engine.encode(" Name a colour."), shared + engine.encode(" Name a fruit.")
    long = SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)
    expected = [o.token_ids for o in engine.generate([first_prompt, second_prompt], [long, GREEDY])]
    eng = make_engine(checkpoint, kv_cache_bytes=64 << 20)
    try:
        decoding = threading.Event()
        first = eng.submit(first_prompt, long, on_update=lambda seq, ids: decoding.set())
        assert decoding.wait(60)  # its prompt is computed: it now decodes for a while
        second = eng.generate([second_prompt], GREEDY)[0]
        handle = eng._handles[first]
        assert handle.done.wait(60)
        assert second.usage.cached_tokens == 96  # borrowed from the request still running
        assert handle.seq.num_preemptions == 0 and handle.seq.output_ids == expected[0]
        assert second.token_ids == expected[1]
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks and eng.radix.num_locked == 0
    finally:
        eng.shutdown()
