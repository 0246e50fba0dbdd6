"""Requests are isolated: a hostile request fails alone (or is refused with a 400 naming
the field) while innocent requests batched beside it finish exactly as they would alone;
the server bounds bodies, counts every 5xx, keeps connections after errors, and aborts a
non-streamed request whose client has gone."""

from __future__ import annotations

import http.client
import json
import math
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from engine import SamplingParams
from engine.server import openai_api
from tests.engine.conftest import make_engine
from tests.engine.serving import metrics, running_server

GREEDY = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
SEEDED = SamplingParams(temperature=0.8, top_p=0.9, seed=11, max_tokens=8, ignore_eos=True)
MARKER = 4242  # a prompt token that the fault-injecting runner below refuses


@pytest.fixture(scope="module")
def eng(checkpoint):
    engine = make_engine(checkpoint, max_model_len=512, kv_cache_bytes=64 << 20)
    yield engine
    engine.shutdown()


@pytest.fixture(scope="module")
def prompts(eng):
    return [eng.encode_chat([{"role": "user", "content": f"Tell me about the number {n}."}]) for n in (3, 5, 7)]


def alone(eng, prompts) -> list[list[int]]:
    return [eng.generate([p], sp)[0].token_ids for p, sp in zip(prompts, [GREEDY, SEEDED, GREEDY])]


def test_a_row_that_cannot_be_sampled_fails_only_its_own_request(eng, prompts):
    expected = alone(eng, prompts)

    def one_nan(generated, logits):  # a partial NaN passes the processor check and reaches the sampler
        logits = logits.clone()
        logits[7] = float("nan")
        return logits

    hostile = SamplingParams(temperature=0.7, max_tokens=8, logits_processor=one_nan)
    outs = eng.generate([prompts[0], prompts[0], prompts[1], prompts[2]], [GREEDY, hostile, SEEDED, GREEDY])
    assert outs[1].finish_reason == "error" and "not finite" in outs[1].error
    assert [o.token_ids for o in (outs[0], outs[2], outs[3])] == expected
    assert all(o.finish_reason == "length" for o in (outs[0], outs[2], outs[3]))


def test_parameters_changed_past_validation_fail_only_their_request(eng, prompts):
    expected = alone(eng, prompts)
    hostile = SamplingParams(temperature=1.0, max_tokens=8)
    rid = eng.submit(prompts[0], hostile)
    hostile.temperature = 5e-324  # becomes 0 in float32: 0/0 in the sampler
    outs = eng.generate(prompts, [GREEDY, SEEDED, GREEDY])
    assert [o.token_ids for o in outs] == expected
    handle = eng._handles.pop(rid)
    assert handle.done.wait(30) and handle.seq.finish_reason == "error" and "not finite" in str(handle.seq.error)


def test_a_model_fault_fails_only_the_request_that_causes_it_fault_injection(checkpoint, prompts, monkeypatch):
    """Fault injection (a runner that raises on one marker token): no real input makes the
    forward pass fail, and when something does, the batch's other requests must not."""
    eng = make_engine(checkpoint, max_model_len=512, kv_cache_bytes=64 << 20)
    try:
        expected = alone(eng, prompts)
        real_prepare, real_run = eng.runner.prepare, eng.runner.run

        def prepare(batch):
            inputs = real_prepare(batch)
            inputs.poisoned = bool((inputs.input_ids == MARKER).any())
            return inputs

        def run(inputs, all_logits=False):
            if inputs.poisoned:
                raise RuntimeError("injected model fault")
            return real_run(inputs, all_logits)

        monkeypatch.setattr(eng.runner, "prepare", prepare)
        monkeypatch.setattr(eng.runner, "run", run)
        outs = eng.generate([prompts[0], [MARKER, 5, 6], prompts[1], prompts[2]], [GREEDY, GREEDY, SEEDED, GREEDY])
        assert outs[1].finish_reason == "error" and "injected model fault" in outs[1].error
        assert [o.token_ids for o in (outs[0], outs[2], outs[3])] == expected
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks  # nothing leaked
    finally:
        eng.shutdown()


# ------------------------------------------------------------------ through the server

INNOCENT = {
    "model": "smollm2",
    "max_tokens": 6,
    "temperature": 0,
    "messages": [{"role": "user", "content": "Say hello."}],
}


def hostile_bodies() -> dict[str, tuple[bytes, str | None]]:
    """name -> (body, the field the 400 must name)."""

    def body(**changes):
        return json.dumps({**INNOCENT, **changes}).encode()

    return {
        "tiny temperature": (body(temperature=5e-324), "temperature"),
        "tiny top_p": (body(top_p=1e-300, temperature=1), "top_p"),
        "seed beyond 64 bits": (body(seed=2**70), "seed"),
        "NaN temperature": (body(temperature=1).replace(b'"temperature": 1', b'"temperature": NaN'), "temperature"),
        "infinite top_p": (body().replace(b'"temperature": 0', b'"top_p": Infinity'), "top_p"),
        "a thousand stop strings": (body(stop=["x"] * 1000), "stop"),
        "truncated JSON": (body()[:-7], None),
    }


@pytest.fixture(scope="module")
def server(eng):
    with running_server(eng, max_body_bytes=1 << 20, body_timeout_s=1.0) as url:
        yield url


def test_hostile_requests_beside_innocent_concurrent_ones(server):
    with httpx.Client(base_url=server, timeout=120) as client:
        alone_reply = client.post("/v1/chat/completions", json=INNOCENT).json()["choices"][0]["message"]["content"]
        before = metrics(client.get("/metrics").text)
        hostile = hostile_bodies()

        def innocent(_):
            return client.post("/v1/chat/completions", json=INNOCENT)

        def attack(name):
            data, _ = hostile[name]
            return name, client.post("/v1/chat/completions", content=data, headers={"content-type": "application/json"})

        with ThreadPoolExecutor(12) as pool:
            good = [pool.submit(innocent, i) for i in range(6)]
            bad = [pool.submit(attack, name) for name in hostile for _ in range(2)]
            innocents = [f.result() for f in good]
            attacks = [f.result() for f in bad]
        for r in innocents:
            assert r.status_code == 200, r.text
            assert r.json()["choices"][0]["message"]["content"] == alone_reply
        for name, r in attacks:
            assert r.status_code == 400, (name, r.status_code, r.text)
            field = hostile[name][1]
            if field is not None:
                err = r.json()["error"]
                assert err["param"] == field or field in err["message"], (name, err)
        after = metrics(client.get("/metrics").text)
        key = "engine_http_requests_total{api=openai,outcome=server_error}"
        assert after.get(key, 0) == before.get(key, 0)


def raw_exchange(url: str, head: bytes, body: bytes, wait_s: float = 10) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait_s) as s:
        s.sendall(head + body)
        reply = b""
        while chunk := s.recv(65536):  # these replies close the connection
            reply += chunk
        return reply


def test_body_size_and_body_read_time_are_bounded(server):
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    )
    too_big = raw_exchange(server, head % (2 << 20), b"{")
    assert too_big.startswith(b"HTTP/1.1 413") and b"at most" in too_big
    t0 = time.monotonic()
    half_sent = raw_exchange(server, head % 200, b'{"model": "smollm2", ')  # the rest never comes
    assert half_sent.startswith(b"HTTP/1.1 408") and b"did not arrive" in half_sent
    assert time.monotonic() - t0 < 10
    assert httpx.post(server + "/v1/chat/completions", json=INNOCENT, timeout=60).status_code == 200


def test_every_5xx_is_counted_and_the_connection_stays_usable_fault_injection(server, monkeypatch):
    """Fault injection (a response builder that raises): a bug must become a counted 500,
    and neither it nor a 4xx may cost the client its kept-alive connection."""
    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    before = metrics(httpx.get(server + "/metrics").text).get(
        "engine_http_requests_total{api=openai,outcome=server_error}", 0
    )

    def post(body: dict) -> http.client.HTTPResponse:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        return r

    first = post(INNOCENT)
    sock = conn.sock
    assert first.status == 200
    assert post({**INNOCENT, "temperature": 9}).status == 400
    monkeypatch.setattr(openai_api, "completion", lambda *a: 1 / 0)
    failed = post(INNOCENT)
    assert failed.status == 500 and not failed.will_close
    monkeypatch.undo()
    assert post(INNOCENT).status == 200
    assert conn.sock is sock  # one connection served all four
    conn.close()
    after = metrics(httpx.get(server + "/metrics").text)["engine_http_requests_total{api=openai,outcome=server_error}"]
    assert after == before + 1


def test_a_non_streamed_request_is_aborted_when_its_client_disconnects(eng, server):
    long = {
        **INNOCENT,
        "max_tokens": 400,
        "messages": [{"role": "user", "content": "Count from 1 to 1000, one number per line."}],
    }
    before = metrics(httpx.get(server + "/metrics").text)
    steps_before = eng.num_steps
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server + "/v1/chat/completions", json=long, timeout=httpx.Timeout(60, read=1.5))
    deadline = time.monotonic() + 30
    while eng.scheduler.running or eng.scheduler.waiting:
        assert time.monotonic() < deadline, "the request kept decoding after its client left"
        time.sleep(0.05)
    assert eng.num_steps - steps_before < 400  # it stopped well before its 400 tokens
    after = metrics(httpx.get(server + "/metrics").text)
    key = "engine_http_requests_total{api=openai,outcome=client_gone}"
    assert after.get(key, 0) == before.get(key, 0) + 1
    assert math.isclose(after["engine_completion_tokens_total"], before["engine_completion_tokens_total"])
