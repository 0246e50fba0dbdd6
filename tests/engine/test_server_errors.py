"""Malformed requests get 4xx replies in the shape of the API they were sent to, and the
server keeps serving: named cases first, then 500+ seeded random ones, then a valid request."""

from __future__ import annotations

import copy
import json
import random

import anthropic
import httpx
import openai
import pytest

from tests.engine.conftest import make_engine
from tests.engine.serving import running_server

OA_PATH, AN_PATH = "/v1/chat/completions", "/v1/messages"
OA_VALID = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}
AN_VALID = {"model": "smollm2", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}},
}
LONG = "word " * 400  # more tokens than this server's 256-token context


@pytest.fixture(scope="module")
def http(checkpoint):
    engine = make_engine(checkpoint, max_model_len=256, kv_cache_bytes=64 << 20)
    with running_server(engine) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client
    engine.shutdown()


def check_error(r: httpx.Response, path: str) -> dict:
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    body = r.json()
    if path == AN_PATH:
        assert body["type"] == "error" and body["error"]["type"] and body["error"]["message"], body
    else:
        assert body["error"]["message"] and body["error"]["type"] == "invalid_request_error", body
    return body


def with_(base: dict, **changes) -> dict:
    out = copy.deepcopy(base)
    for k, v in changes.items():
        if v is ...:
            out.pop(k, None)
        else:
            out[k] = v
    return out


OPENAI_CASES = {
    "invalid JSON": b'{"model": "smollm2", "messages": [',
    "not an object": b"[1, 2, 3]",
    "empty body": b"",
    "missing model": with_(OA_VALID, model=...),
    "missing messages": with_(OA_VALID, messages=...),
    "no messages": with_(OA_VALID, messages=[]),
    "unknown model": with_(OA_VALID, model="gpt-9"),
    "bad role": with_(OA_VALID, messages=[{"role": "robot", "content": "beep"}]),
    "tool result without a call": with_(OA_VALID, messages=[{"role": "tool", "tool_call_id": "x", "content": "1"}]),
    "content of the wrong type": with_(OA_VALID, messages=[{"role": "user", "content": 5}]),
    "temperature out of range": with_(OA_VALID, temperature=7),
    "max_tokens zero": with_(OA_VALID, max_tokens=0),
    "n above one": with_(OA_VALID, n=3),
    "prompt longer than the context": with_(OA_VALID, messages=[{"role": "user", "content": LONG}]),
    "tool parameters not an object": with_(
        OA_VALID, tools=[{"type": "function", "function": {"name": "f", "parameters": "int"}}]
    ),
    "tool schema invalid": with_(
        OA_VALID, tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "integr"}}}]
    ),
    "tool name with spaces": with_(OA_VALID, tools=[{"type": "function", "function": {"name": "get weather"}}]),
    "duplicate tool names": with_(OA_VALID, tools=[TOOL, TOOL]),
    "required tool_choice without tools": with_(OA_VALID, tool_choice="required"),
    "named tool that does not exist": with_(
        OA_VALID, tools=[TOOL], tool_choice={"type": "function", "function": {"name": "g"}}
    ),
    "json_schema format without a schema": with_(OA_VALID, response_format={"type": "json_schema"}),
}

ANTHROPIC_CASES = {
    "invalid JSON": b"{'model': 'smollm2'}",
    "missing max_tokens": with_(AN_VALID, max_tokens=...),
    "unknown model": with_(AN_VALID, model="claude-0"),
    "system role in messages": with_(AN_VALID, messages=[{"role": "system", "content": "x"}]),
    "unknown block type": with_(AN_VALID, messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}]),
    "tool_result without a tool_use": with_(
        AN_VALID, messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]
    ),
    "empty user message": with_(AN_VALID, messages=[{"role": "user", "content": ""}]),
    "user message of no blocks": with_(AN_VALID, messages=[{"role": "user", "content": []}]),
    "temperature above one": with_(AN_VALID, temperature=1.5),
    "tool schema invalid": with_(AN_VALID, tools=[{"name": "f", "input_schema": {"type": 12}}]),
    "tool choice without a name": with_(
        AN_VALID, tools=[{"name": "f", "input_schema": {"type": "object"}}], tool_choice={"type": "tool"}
    ),
    "prompt longer than the context": with_(AN_VALID, messages=[{"role": "user", "content": LONG}]),
}


def send(http: httpx.Client, path: str, body) -> httpx.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post(path, content=data, headers={"content-type": "application/json"})


@pytest.mark.parametrize("case", OPENAI_CASES)
def test_openai_malformed_request(http, case):
    body = check_error(send(http, OA_PATH, OPENAI_CASES[case]), OA_PATH)
    if case == "unknown model":
        assert body["error"]["code"] == "model_not_found"
    if case == "prompt longer than the context":
        assert body["error"]["code"] == "context_length_exceeded"


@pytest.mark.parametrize("case", ANTHROPIC_CASES)
def test_anthropic_malformed_request(http, case):
    body = check_error(send(http, AN_PATH, ANTHROPIC_CASES[case]), AN_PATH)
    if case == "unknown model":
        assert body["error"]["type"] == "not_found_error"


def test_unknown_route_and_wrong_method(http):
    assert http.get("/v1/nothing").status_code == 404
    assert http.get(OA_PATH).status_code == 405
    check_error(http.get(AN_PATH), AN_PATH)


# ------------------------------------------------------------------ seeded fuzzing

WRONG_VALUES = [None, True, -1, 0, 3.5, "", "x" * 3, [], [1], {}, {"a": 1}]
REQUIRED = {OA_PATH: ["model", "messages"], AN_PATH: ["model", "messages", "max_tokens"]}


def _wrong_type(rng: random.Random, field: str):
    valid = {"model": str, "messages": list, "max_tokens": int}[field]
    pool = [v for v in WRONG_VALUES if type(v) is not valid or v in ([], 0, -1)]
    return rng.choice(pool)


def malformed(rng: random.Random) -> tuple[str, bytes]:
    """One request that is wrong in a way the server must refuse."""
    path = rng.choice([OA_PATH, AN_PATH])
    body = copy.deepcopy(OA_VALID if path == OA_PATH else AN_VALID)
    kind = rng.randrange(9)
    if kind == 0:  # a proper prefix of a JSON object is never valid JSON
        text = json.dumps(body)
        return path, text[: rng.randrange(len(text))].encode()
    if kind == 1:  # bytes that are not a JSON object
        return path, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"{", b"[")
    if kind == 2:
        del body[rng.choice(REQUIRED[path])]
    elif kind == 3:
        field = rng.choice(REQUIRED[path])
        body[field] = _wrong_type(rng, field)
    elif kind == 4:
        body["messages"][0]["role"] = rng.choice(["robot", "", "USER", "function", "Assistant", 7, None])
    elif kind == 5:
        body["temperature"] = rng.choice([-rng.random() - 0.01, 2.0 + rng.random() * 100, "warm", [0.5]])
    elif kind == 6:
        body["model"] = "no-such-model-" + str(rng.randrange(10**6))
    elif kind == 7:
        bad = rng.choice(["string", 5, [], {"type": "strin"}, {"type": "object", "properties": 3}, {"required": "x"}])
        if path == OA_PATH:
            body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": bad}}]
        else:
            body["tools"] = [{"name": "f", "input_schema": bad}]
    else:
        body["messages"] = [{"role": "user", "content": "lorem " * rng.randrange(300, 600)}]
    return path, json.dumps(body).encode()


def test_five_hundred_seeded_malformed_requests_then_a_valid_one(http):
    rng = random.Random(20261129)
    for _ in range(520):
        path, data = malformed(rng)
        r = http.post(path, content=data, headers={"content-type": "application/json"})
        check_error(r, path)
    ok = send(http, OA_PATH, OA_VALID)
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] is not None
    ok = send(http, AN_PATH, AN_VALID)
    assert ok.status_code == 200 and ok.json()["content"][0]["type"] == "text"
    assert http.get("/health").json()["status"] == "ok"


# ------------------------------------------------------------------ what the server cannot honour, through the SDKs

UNSUPPORTED_OPENAI = {
    "logprobs": {"logprobs": True},
    "top_logprobs": {"top_logprobs": 2},
    "presence_penalty": {"presence_penalty": 0.5},
    "frequency_penalty": {"frequency_penalty": -1.0},
    "logit_bias": {"logit_bias": {"50": 100}},
}


@pytest.fixture(scope="module")
def sdks(http):
    base = str(http.base_url).rstrip("/")
    return (
        openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60),
        anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0, timeout=60),
    )


@pytest.mark.parametrize("param", UNSUPPORTED_OPENAI)
def test_an_openai_parameter_the_server_cannot_honour_is_refused_not_ignored(sdks, param):
    oa, _ = sdks
    with pytest.raises(openai.BadRequestError) as caught:
        oa.chat.completions.create(**OA_VALID, **UNSUPPORTED_OPENAI[param])
    error = caught.value.body
    assert error["param"] == param and error["code"] == "unsupported_parameter" and param in error["message"]


def test_those_parameters_at_their_defaults_are_accepted(sdks):
    oa, _ = sdks
    r = oa.chat.completions.create(**OA_VALID, logprobs=False, presence_penalty=0, frequency_penalty=0.0, logit_bias={})
    assert r.choices[0].message.content is not None


@pytest.mark.parametrize("thinking", [{"type": "enabled", "budget_tokens": 1024}, {"type": "adaptive"}])
def test_anthropic_thinking_is_refused_by_a_model_that_does_not_think(sdks, thinking):
    _, an = sdks
    with pytest.raises(anthropic.BadRequestError) as caught:
        an.messages.create(**{**AN_VALID, "max_tokens": 2048}, thinking=thinking)
    assert caught.value.body["type"] == "error" and "thinking" in caught.value.body["error"]["message"]
    disabled = an.messages.create(**AN_VALID, thinking={"type": "disabled"})
    assert disabled.content[0].type == "text"
