"""A scripted HTTP provider: a real loopback HTTP server that answers each POST with the next
planned action (a status with headers and a JSON body, or a dropped connection), and each GET
with the model list the test gave (or a 404), and records every request. It stands in for
OpenAI or Anthropic, which cannot run on CI."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DROP = ("drop",)


def reply(status: int, body: dict, headers: dict | None = None) -> tuple:
    return ("reply", status, body, headers or {})


def raw(status: int, body: bytes, content_type: str) -> tuple:
    """A body sent as it is: an HTML page, broken JSON."""
    return ("raw", status, body, {"content-type": content_type})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        """A model list when the test gave one (`listing`), else 404 as from a server that has none."""
        srv = self.server
        with srv.lock:
            srv.gets.append(self.path)
        listing = srv.listing
        data = json.dumps(listing if listing is not None else {"error": {"message": "no such route"}}).encode()
        self.send_response(200 if listing is not None else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        srv = self.server
        with srv.lock:
            srv.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw or b"null")})
            action = srv.plan.pop(0) if srv.plan else reply(500, {"error": {"message": "the test's plan is used up"}})
        if action == DROP:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        kind, status, body, headers = action
        data = body if kind == "raw" else json.dumps(body).encode()
        self.send_response(status)
        if "content-type" not in headers:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def provider(plan: list, listing: dict | None = None):
    """`plan`: the answers to POSTs, in order; `listing`: the body GET answers (a model list)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.plan = list(plan)
    server.listing = listing
    server.gets = []
    server.requests = []
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def openai_completion(tool_calls=None, text=None, cached=64) -> dict:
    message = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 3},
        },
    }


def anthropic_message(content: list, stop_reason="tool_use") -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "output_tokens": 10,
            "cache_read_input_tokens": 70,
            "cache_creation_input_tokens": 10,
        },
    }


def openai_error(status: int, message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


@contextlib.contextmanager
def black_hole():
    """A port whose kernel completes every connection and whose program never reads or answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
