"""The engine's HTTP server, driven by the official `openai` and `anthropic` SDKs over real HTTP.

The real embedded model answers; tests check the protocol, not the (135M) model's wisdom.
"""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import httpx
import jsonschema
import openai
import pytest

from tests.engine.serving import metrics, running_server

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
OA_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": WEATHER},
    }
]
AN_TOOLS = [{"name": "get_weather", "description": "Current weather in a city", "input_schema": WEATHER}]
ASK = "What is the weather in Paris right now?"


@pytest.fixture(scope="module")
def base(engine):
    with running_server(engine) as url:
        yield url


@pytest.fixture(scope="module")
def oa(base):
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def an(base):
    return anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0, timeout=120)


def test_models_health_and_metrics(engine, base, oa):
    (card,) = oa.models.list()
    assert card.id == "smollm2"
    # what a client needs to keep its prompts in bounds: the engine's window, under max_model_len
    assert card.model_extra == {"context_window": engine.context_window, "max_model_len": engine.max_model_len}
    assert 0 < engine.context_window <= engine.max_model_len
    assert httpx.get(base + "/health").json()["status"] == "ok"
    m = metrics(httpx.get(base + "/metrics").text)
    for name in (
        "engine_requests_running",
        "engine_requests_waiting",
        "engine_kv_blocks_used",
        "engine_cache_hit_rate",
        "engine_prompt_tokens_total",
        "engine_cached_tokens_total",
        "engine_step_seqs_count",
        "engine_kv_blocks_evicted_total",
    ):
        assert name in m


def test_a_model_is_retrieved_by_id_in_each_sdks_shape(engine, oa, an):
    card = oa.models.retrieve("smollm2")
    assert card.id == "smollm2" and card.model_extra["context_window"] == engine.context_window
    info = an.models.retrieve("smollm2")
    assert info.type == "model" and info.id == "smollm2" and info.display_name == "smollm2"
    assert info.max_input_tokens == engine.context_window - 1 and info.created_at.tzinfo is not None
    (listed,) = an.models.list()
    assert listed == info
    with pytest.raises(openai.NotFoundError) as oa_missing:
        oa.models.retrieve("gpt-9")
    assert oa_missing.value.body["code"] == "model_not_found"
    with pytest.raises(anthropic.NotFoundError) as an_missing:
        an.models.retrieve("claude-0")
    assert an_missing.value.body["error"]["type"] == "not_found_error"


def test_anthropic_count_tokens_is_the_input_a_reply_is_billed_for(an):
    ask = dict(
        model="smollm2",
        system=[{"type": "text", "text": "Be brief."}],
        messages=[{"role": "user", "content": ASK}],
        tools=AN_TOOLS,
    )
    counted = an.messages.count_tokens(**ask).input_tokens
    u = an.messages.create(**ask, max_tokens=1).usage
    assert counted == u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens > 0
    with pytest.raises(anthropic.NotFoundError) as missing:
        an.messages.count_tokens(**{**ask, "model": "claude-0"})
    assert missing.value.body["type"] == "error" and missing.value.body["error"]["type"] == "not_found_error"


def test_openai_plain_chat(oa):
    r = oa.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0
    )
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")
    u = r.usage
    assert u.completion_tokens <= 8 and u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert u.prompt_tokens_details is not None and 0 <= u.prompt_tokens_details.cached_tokens < u.prompt_tokens
    assert 0 < r.model_extra["timings"]["ttft_ms"] < 120_000  # the server's own field beside the usage


def test_openai_tool_call_round_trip_reports_cached_tokens(oa):
    messages = [{"role": "user", "content": ASK}]
    first = oa.chat.completions.create(
        model="smollm2", messages=messages, tools=OA_TOOLS, tool_choice="required", max_tokens=48, temperature=0
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 18, "sky": "clear"}'},
    ]
    second = oa.chat.completions.create(
        model="smollm2", messages=messages, tools=OA_TOOLS, tool_choice="none", max_tokens=16, temperature=0
    )
    assert second.choices[0].message.content and not second.choices[0].message.tool_calls
    # The second turn's prompt starts with the whole first one: the prefix cache serves it.
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens // 16 * 16 - 16 > 0


def test_openai_streaming_with_usage(oa):
    stream = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Count to five."}],
        max_tokens=12,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = chunks[-1].usage
    assert text and chunks[-1].choices == [] and usage.completion_tokens <= 12
    assert usage.prompt_tokens_details.cached_tokens is not None
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes in (["stop"], ["length"])
    plain = oa.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Count to five."}], max_tokens=12, temperature=0
    )
    assert plain.choices[0].message.content == text  # greedy: streaming changes nothing


def test_openai_streamed_tool_call(oa):
    stream = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": ASK}],
        tools=OA_TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=48,
        temperature=0,
        stream=True,
    )
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert len(calls) == 1 and calls[0].function.name == "get_weather"
    jsonschema.validate(json.loads(calls[0].function.arguments), WEATHER)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ""  # the call is not shown as text


def test_openai_json_schema_response_format(oa):
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    r = oa.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "What is 2 + 2? Reply in JSON."}],
        max_tokens=24,
        temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "sum", "schema": schema}},
    )
    jsonschema.validate(json.loads(r.choices[0].message.content), schema)


def test_anthropic_output_config_format_constrains_the_reply(an):
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    m = an.messages.create(
        model="smollm2",
        max_tokens=24,
        messages=[{"role": "user", "content": "What is 2 + 2?"}],
        output_config={"format": {"type": "json_schema", "schema": schema}},
        extra_body={"temperature": 0},
    )
    jsonschema.validate(json.loads(m.content[0].text), schema)


def test_anthropic_plain_message(an):
    m = an.messages.create(
        model="smollm2", max_tokens=8, system="Be brief.", messages=[{"role": "user", "content": "Say hello."}]
    )
    assert m.content[0].type == "text" and m.content[0].text and m.stop_reason in ("end_turn", "max_tokens")
    u = m.usage
    assert u.output_tokens <= 8 and u.cache_read_input_tokens is not None and u.cache_creation_input_tokens is not None
    assert u.input_tokens >= 1


def test_anthropic_tool_use_round_trip_reports_cache_reads(an):
    messages = [{"role": "user", "content": ASK}]
    first = an.messages.create(
        model="smollm2",
        max_tokens=48,
        messages=messages,
        tools=AN_TOOLS,
        tool_choice={"type": "any"},
        extra_body={"temperature": 0},  # sampled, the arguments may run past max_tokens before the call closes
    )
    assert first.stop_reason == "tool_use"
    use = next(b for b in first.content if b.type == "tool_use")
    jsonschema.validate(use.input, WEATHER)
    messages += [
        {"role": "assistant", "content": [b.to_dict() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18 C, clear"}]},
    ]
    second = an.messages.create(
        model="smollm2", max_tokens=16, messages=messages, tools=AN_TOOLS, tool_choice={"type": "none"}
    )
    assert second.content and second.content[0].type == "text"
    first_total = (
        first.usage.input_tokens + first.usage.cache_read_input_tokens + first.usage.cache_creation_input_tokens
    )
    assert second.usage.cache_read_input_tokens >= first_total // 16 * 16 - 16 > 0


def test_anthropic_streaming_events(an):
    with an.messages.stream(
        model="smollm2",
        max_tokens=48,
        messages=[{"role": "user", "content": ASK}],
        tools=AN_TOOLS,
        tool_choice={"type": "tool", "name": "get_weather"},
        extra_body={"temperature": 0},  # sampled, the arguments may run past max_tokens before the call closes
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "message_delta" in kinds
    assert final.stop_reason == "tool_use" and final.content[-1].type == "tool_use"
    jsonschema.validate(final.content[-1].input, WEATHER)
    assert final.usage.output_tokens > 0 and final.usage.cache_read_input_tokens is not None


def test_anthropic_stop_sequence(an):
    m = an.messages.create(
        model="smollm2",
        max_tokens=32,
        messages=[{"role": "user", "content": "List three fruits, one per line."}],
        stop_sequences=["\n"],
        extra_body={"temperature": 0},
    )
    if m.stop_reason == "stop_sequence":
        assert m.stop_sequence == "\n" and "\n" not in m.content[0].text
    else:  # the model may finish the first line with end-of-turn; it must not have passed a newline
        assert "\n" not in "".join(b.text for b in m.content)


def test_second_turn_reports_cached_tokens_through_both_apis(oa, an):
    history = [{"role": "user", "content": "Name a colour."}]
    one = oa.chat.completions.create(model="smollm2", messages=history, max_tokens=8, temperature=0)
    history += [
        {"role": "assistant", "content": one.choices[0].message.content},
        {"role": "user", "content": "And another?"},
    ]
    two = oa.chat.completions.create(model="smollm2", messages=history, max_tokens=8, temperature=0)
    assert two.usage.prompt_tokens_details.cached_tokens > 0
    assert two.usage.prompt_tokens > two.usage.prompt_tokens_details.cached_tokens

    history = [{"role": "user", "content": "Name an animal."}]
    one = an.messages.create(model="smollm2", max_tokens=8, messages=history, extra_body={"temperature": 0})
    history += [{"role": "assistant", "content": one.content[0].text}, {"role": "user", "content": "And another?"}]
    two = an.messages.create(model="smollm2", max_tokens=8, messages=history, extra_body={"temperature": 0})
    assert two.usage.cache_read_input_tokens > 0


def test_eight_concurrent_requests_are_batched_by_the_scheduler(base, oa):
    before = metrics(httpx.get(base + "/metrics").text)

    def ask(i: int):
        return oa.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": f"Tell me a fact about the number {i}."}],
            max_tokens=24,
            temperature=0.7,
            seed=i,
        )

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(ask, range(8)))
    assert all(r.choices[0].finish_reason in ("stop", "length") for r in replies)
    after = metrics(httpx.get(base + "/metrics").text)
    steps = after["engine_step_seqs_count"] - before["engine_step_seqs_count"]
    tokens = sum(r.usage.completion_tokens for r in replies)
    # Run one after another, the burst would take a step per token (plus prefills); batched,
    # each step produces a token for several requests at once.
    assert 0 < steps <= tokens / 2, (steps, tokens)
    assert after["engine_max_batch_seqs"] >= 4
    ok = "engine_http_requests_total{api=openai,outcome=ok}"
    assert after[ok] - before.get(ok, 0) == 8


def test_reset_prefix_cache_serves_the_next_prompt_cold(base, oa):
    ask = dict(model="smollm2", messages=[{"role": "user", "content": "Count to three. " * 12}], max_tokens=1)
    oa.chat.completions.create(**ask)
    assert oa.chat.completions.create(**ask).usage.prompt_tokens_details.cached_tokens > 0
    evicted = metrics(httpx.get(base + "/metrics").text)["engine_kv_blocks_evicted_total"]
    reset = httpx.post(base + "/reset_prefix_cache")
    assert reset.status_code == 200 and reset.json()["freed_blocks"] > 0
    assert oa.chat.completions.create(**ask).usage.prompt_tokens_details.cached_tokens == 0
    after = metrics(httpx.get(base + "/metrics").text)
    assert after["engine_kv_blocks_evicted_total"] == evicted  # a reset is not an eviction
    assert after["engine_kv_cache_tokens"] == after["engine_kv_blocks_total"] * 16


def test_an_idle_keep_alive_connection_outlives_the_clients_own_expiry(base):
    # HTTP clients drop idle connections after 5 s; the server must not close them first.
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/health")
        first = conn.getresponse()
        assert first.status == 200 and first.read()
        sock = conn.sock
        time.sleep(6)
        conn.request("GET", "/health")  # a closed connection fails here or in getresponse
        second = conn.getresponse()
        assert second.status == 200 and second.read() and conn.sock is sock
    finally:
        conn.close()


def test_a_call_cut_short_by_max_tokens_reads_the_same_streamed_or_whole(oa, an):
    ask = dict(model="smollm2", messages=[{"role": "user", "content": ASK}], max_tokens=6, temperature=0)
    whole = oa.chat.completions.create(**ask, tools=OA_TOOLS, tool_choice="required").choices[0]
    chunks = list(oa.chat.completions.create(**ask, tools=OA_TOOLS, tool_choice="required", stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert whole.finish_reason == "length" and not whole.message.tool_calls
    assert whole.message.content.startswith("<tool_call>") and streamed == whole.message.content

    ask = dict(model="smollm2", max_tokens=6, messages=[{"role": "user", "content": ASK}], tools=AN_TOOLS)
    ask |= dict(tool_choice={"type": "any"}, extra_body={"temperature": 0})
    message = an.messages.create(**ask)
    with an.messages.stream(**ask) as stream:
        final = stream.get_final_message()
    assert message.stop_reason == final.stop_reason == "max_tokens"
    assert [b.to_dict() for b in final.content] == [b.to_dict() for b in message.content]


def test_anthropic_prefill_is_continued_not_answered_anew(an):
    ask = [{"role": "user", "content": "Say hello."}]
    whole = an.messages.create(model="smollm2", max_tokens=10, messages=ask, extra_body={"temperature": 0})
    text = whole.content[0].text
    cut = text.index(" ", len(text) // 3)  # at a word's end: a prefill may not end in whitespace
    prefill = [*ask, {"role": "assistant", "content": text[:cut]}]
    rest = an.messages.create(model="smollm2", max_tokens=4, messages=prefill, extra_body={"temperature": 0})
    assert text[:cut] + rest.content[0].text == text[: cut + len(rest.content[0].text)]  # greedy: the same words
    with pytest.raises(anthropic.BadRequestError) as caught:
        an.messages.create(model="smollm2", max_tokens=4, messages=[*ask, {"role": "assistant", "content": "Hi "}])
    assert "trailing whitespace" in caught.value.body["error"]["message"]
