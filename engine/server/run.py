"""Start a server: load the model, build the app, run uvicorn (in the foreground, or in a
thread of this process with `running`)."""

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from engine.config import EngineConfig
from engine.engine import Engine
from engine.server.app import REQUEST_TIMEOUT_S, create_app

DEFAULT_NAME = "smollm2"
# Idle keep-alive connections stay open well past the 5 s after which HTTP clients (httpx, and so the
# OpenAI and Anthropic SDKs) drop them: with equal limits, a client reusing a connection the server
# is closing gets a dropped request, which many agents at once met several times a minute.
KEEP_ALIVE_S = 75


def serve(
    model: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: EngineConfig | None = None,
    name: str | None = None,
    log_level: str = "info",
    request_timeout_s: float = REQUEST_TIMEOUT_S,
) -> None:
    """Serve `model` (a GGUF file or model folder; None: the embedded SmolLM2-135M-Instruct)
    under `name` (default: "smollm2" for the embedded model, else the file's stem)."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    engine = Engine(model, config)
    names = [name or (Path(model).stem if model else DEFAULT_NAME)]
    app = create_app(engine, names, body_timeout_s=request_timeout_s)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, **connection_settings(request_timeout_s))
    finally:
        engine.shutdown()


def connection_settings(request_timeout_s: float) -> dict:
    """uvicorn's settings for this server's connections: the keep-alive time, and headers on a deadline."""
    return {"timeout_keep_alive": KEEP_ALIVE_S, "http": headers_on_a_deadline(request_timeout_s)}


def headers_on_a_deadline(timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers are not whole within `timeout_s` of
    its first byte (or of its opening, or of the previous reply). uvicorn has no such deadline: a client
    that sends half its headers, or nothing, would hold the connection for good. The body's deadline is
    the app's (app.read_body answers 408)."""

    class Protocol(H11Protocol):
        deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self.deadline = self.loop.call_later(timeout_s, self.timeout_keep_alive_handler)

        def data_received(self, data: bytes) -> None:
            if self.deadline is None and (self.cycle is None or self.cycle.response_complete):
                self.deadline = self.loop.call_later(timeout_s, self.timeout_keep_alive_handler)
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete and self.deadline is not None:
                self.deadline.cancel()  # the headers are whole: the request is the app's now
                self.deadline = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            super().connection_lost(exc)

    return Protocol


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(
    app,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_level: str = "warning",
    request_timeout_s: float = REQUEST_TIMEOUT_S,
) -> Iterator[str]:
    """Serve `app` with uvicorn in a thread of this process; yields its base URL (no /v1)."""
    port = port or free_port(host)
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level=log_level, **connection_settings(request_timeout_s))
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the server on {host}:{port} did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


if __name__ == "__main__":
    serve()
