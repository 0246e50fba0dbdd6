"""Greedy decode with the device one step ahead of the host (engine/step.py, `decode_ahead`) gives
exactly the outputs of the synchronous loop, whatever ends a request and whatever arrives
meanwhile, and leaves every KV block accounted for. On the CUDA path it is on by default and
tests/engine/test_cuda.py checks it there; these tests turn it on for the CPU runner, where the
engine's own bookkeeping (rows that finish while the next step runs, blocks reserved ahead,
tokens dropped) is the same."""

import threading
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import SamplingParams
from tests.engine.conftest import make_engine
from tests.engine.serving import running_server

SMALL_KV = 14 * 16 * 46080  # 14 blocks of 16 tokens: four requests of ~90 tokens must preempt


@pytest.fixture(scope="module")
def sync(checkpoint):
    eng = make_engine(checkpoint, kv_cache_bytes=64 << 20, decode_ahead=False)
    yield eng
    eng.shutdown()


@pytest.fixture(scope="module")
def ahead(checkpoint):
    eng = make_engine(checkpoint, kv_cache_bytes=64 << 20, decode_ahead=True)
    yield eng
    eng.shutdown()


@pytest.fixture(scope="module")
def prompts(sync):
    topics = ("the sea", "a robot", "prime numbers", "tea")
    return [sync.encode_chat([{"role": "user", "content": f"Write two sentences about {t}."}]) for t in topics]


def launches_ahead(eng) -> list[int]:
    """Counts the steps launched from the tokens of the step before (a spy on the real runner)."""
    counter = [0]
    real = eng.runner.launch

    def launch(inputs, ids_from=None):
        counter[0] += ids_from is not None
        return real(inputs, ids_from)

    eng.runner.launch = launch
    return counter


def summary(outs) -> list[tuple]:
    return [(o.token_ids, o.text, o.finish_reason, o.usage, o.stop_sequence) for o in outs]


def no_leak(eng) -> bool:
    return eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks and eng.radix.num_locked == 0


def test_outputs_equal_the_synchronous_loop_with_eos_stops_and_lengths(sync, ahead, prompts):
    params = [
        SamplingParams(temperature=0, max_tokens=60),  # may end by EOS
        SamplingParams(temperature=0, max_tokens=5, ignore_eos=True),  # ends by length early
        SamplingParams(temperature=0, max_tokens=40, stop=[".", "!"]),  # ends by a stop string
        SamplingParams(temperature=0, max_tokens=33, ignore_eos=True),  # crosses block boundaries
    ]
    counter = launches_ahead(ahead)
    want = summary(sync.generate(prompts, params))
    got = summary(ahead.generate(prompts, params))
    assert got == want
    assert counter[0] > 20  # most steps ran ahead
    assert no_leak(ahead)
    # The blocks it shared while running ahead hold the right tokens: a follow-up borrows them.
    follow = [prompts[3] + want[3][0]]
    again = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    out = ahead.generate(follow, again)[0]
    assert out.usage.cached_tokens >= 64
    assert out.token_ids == sync.generate(follow, again)[0].token_ids


def test_a_sampled_request_joins_and_the_batch_falls_back_to_the_synchronous_step(sync, ahead, prompts):
    params = [
        SamplingParams(temperature=0, max_tokens=20, ignore_eos=True),
        SamplingParams(temperature=0.8, top_p=0.9, seed=3, max_tokens=20, ignore_eos=True),
    ]
    assert summary(ahead.generate(prompts[:2], params)) == summary(sync.generate(prompts[:2], params))
    assert no_leak(ahead)


def test_an_arrival_and_an_abort_while_a_decode_runs_ahead(sync, ahead, prompts):
    long = SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)
    short = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    want_long, want_short = (o.token_ids for o in sync.generate(prompts[:2], [long, short]))
    decoding, six = threading.Event(), threading.Event()

    def on_update(seq, ids):
        decoding.set()
        if seq.num_output >= 6:
            six.set()

    first = ahead.submit(prompts[0], long, on_update=on_update)
    doomed = ahead.submit(prompts[2], long, on_update=lambda seq, ids: None)
    assert decoding.wait(60)
    second = ahead.generate([prompts[1]], short)[0]  # arrives while the other two decode ahead
    assert six.wait(60)
    ahead.abort(doomed)
    handles = [ahead._handles[first], ahead._handles[doomed]]
    assert all(h.done.wait(60) for h in handles)
    assert second.token_ids == want_short
    assert handles[0].seq.output_ids == want_long and handles[0].seq.finish_reason == "length"
    assert handles[1].seq.finish_reason == "abort" and len(handles[1].seq.output_ids) < 48
    for rid in (first, doomed):
        ahead._handles.pop(rid, None)
    assert no_leak(ahead)


def test_a_cache_too_small_to_reserve_ahead_preempts_as_before(checkpoint, prompts):
    params = SamplingParams(temperature=0, max_tokens=30, ignore_eos=True)
    outs = {}
    for on in (False, True):  # fresh engines: the same cold cache, so the same preemptions
        small = make_engine(checkpoint, kv_cache_bytes=SMALL_KV, max_num_batched_tokens=128, decode_ahead=on)
        try:
            counter = launches_ahead(small)
            outs[on] = summary(small.generate(prompts, params))
            assert small.scheduler.total_preemptions > 0 and (counter[0] > 0) == on
            assert no_leak(small)
        finally:
            small.shutdown()
    assert outs[True] == outs[False]


def served(eng) -> list:
    """A streamed OpenAI chat, an Anthropic message that ends on a stop sequence, and four
    concurrent OpenAI requests, through the real server and the official SDKs."""
    with running_server(eng) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        an = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0, timeout=120)
        chunks = list(
            oa.chat.completions.create(
                model="smollm2",
                messages=[{"role": "user", "content": "Count to ten."}],
                max_tokens=40,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        m = an.messages.create(
            model="smollm2",
            max_tokens=40,
            messages=[{"role": "user", "content": "List three fruits, one per line."}],
            stop_sequences=["\n"],
            extra_body={"temperature": 0},
        )

        def ask(topic: str) -> str | None:
            r = oa.chat.completions.create(
                model="smollm2",
                messages=[{"role": "user", "content": f"One sentence about {topic}."}],
                max_tokens=24,
                temperature=0,
            )
            return r.choices[0].message.content

        with ThreadPoolExecutor(4) as pool:
            many = list(pool.map(ask, ["cats", "rain", "maps", "jazz"]))
    return [text, finish, chunks[-1].usage.completion_tokens, m.content[0].text, m.stop_reason, many]


def test_the_server_answers_as_with_synchronous_steps(sync, ahead):
    counter = launches_ahead(ahead)
    assert served(ahead) == served(sync)
    assert counter[0] > 0
    assert no_leak(ahead)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 14), st.booleans(), st.sampled_from([[], ["."], [" the", ","]])),
        min_size=1,
        max_size=4,
    )
)
def test_any_mix_of_lengths_and_stops_gives_the_synchronous_outputs(sync, ahead, prompts, requests):
    chosen = [prompts[i] for i, *_ in requests]
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=e, stop=s) for _, n, e, s in requests]
    assert summary(ahead.generate(chosen, params)) == summary(sync.generate(chosen, params))
    assert no_leak(ahead)
