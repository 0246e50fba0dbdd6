"""The server's edges: stalled connections are closed on the configured timeout, a client's hang-up is one line
in the log with no traceback, and no error body names the server's own source files."""

import json
import logging
import re
import socket
import time

import httpx
import pytest

from tests.engine.conftest import make_engine
from tests.engine.serving import running_server

OA = "/v1/chat/completions"
TIMEOUT_S = 1.5
VALID = {"model": "smollm2", "max_tokens": 40, "temperature": 0, "messages": [{"role": "user", "content": "Hi."}]}


@pytest.fixture(scope="module")
def url(checkpoint):
    engine = make_engine(checkpoint, max_model_len=256, kv_cache_bytes=64 << 20)
    with running_server(engine, request_timeout_s=TIMEOUT_S) as base:
        yield base
    engine.shutdown()


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)))
    s.settimeout(30)
    return s


def _head(body: bytes, path: str = OA) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()


def _closed_after(s: socket.socket) -> tuple[float, bytes]:
    start, got = time.monotonic(), b""
    while chunk := s.recv(4096):
        got += chunk
    return time.monotonic() - start, got


@pytest.mark.parametrize("sent", ["nothing", "half the headers", "the headers and half the body"])
def test_a_stalled_connection_is_closed_within_the_timeout(url, sent):
    body = json.dumps(VALID).encode()
    data = {
        "nothing": b"",
        "half the headers": _head(body)[:30],
        "the headers and half the body": _head(body) + body[:9],
    }
    with _connect(url) as s:
        s.sendall(data[sent])
        took, got = _closed_after(s)
    assert took < TIMEOUT_S + 1.0
    if sent == "the headers and half the body":
        assert got.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 1.5 s" in got
    with httpx.Client(base_url=url, timeout=60) as client:  # valid requests still pass
        assert client.post(OA, json=VALID).status_code == 200


def test_a_client_that_hangs_up_is_one_line_in_the_log(url, caplog):
    body = json.dumps(VALID).encode()
    streamed = json.dumps({**VALID, "stream": True}).encode()
    with caplog.at_level(logging.INFO, logger="engine.server"):
        with _connect(url) as s:  # in the middle of its body
            s.sendall(_head(body) + body[:9])
            time.sleep(0.2)
        with _connect(url) as s:  # while its reply is made
            s.sendall(_head(body) + body)
            time.sleep(0.05)
        with _connect(url) as s:  # in the middle of its stream
            s.sendall(_head(streamed) + streamed)
            s.recv(64)
        deadline = time.monotonic() + 20
        while len([r for r in caplog.records if "hung up" in r.getMessage()]) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    said = [r.getMessage() for r in caplog.records if r.name == "engine.server"]
    assert [re.sub(r"^127\.0\.0\.1:\d+ ", "", m) for m in said] == [
        "hung up while sending its request body (POST /v1/chat/completions)",
        "hung up before its reply was ready (POST /v1/chat/completions)",
        "hung up during its stream (POST /v1/chat/completions)",
    ]
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": 5, "maximum": 1},
        {"type": "string", "pattern": "(("},
        {"type": "array", "minItems": 3, "maxItems": 1},
    ],
)
def test_a_schema_the_grammar_refuses_is_said_without_the_servers_source_files(url, schema):
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    with httpx.Client(base_url=url, timeout=60) as client:
        r = client.post(OA, json={**VALID, "response_format": fmt})
    message = r.json()["error"]["message"]
    assert r.status_code == 400 and "schema" in message
    assert not re.search(r"\.(cc|cpp|h|py)\b|/project/|\[\d\d:\d\d", message), message
