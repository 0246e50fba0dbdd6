"""Start a server: load the model, build the app, run uvicorn (in the foreground, or in a
thread of this process with `running`)."""

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from engine.config import EngineConfig
from engine.engine import Engine
from engine.server.app import create_app

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
) -> None:
    """Serve `model` (a GGUF file or model folder; None: the embedded SmolLM2-135M-Instruct)
    under `name` (default: "smollm2" for the embedded model, else the file's stem)."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    engine = Engine(model, config)
    names = [name or (Path(model).stem if model else DEFAULT_NAME)]
    app = create_app(engine, names)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_keep_alive=KEEP_ALIVE_S)
    finally:
        engine.shutdown()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(app, host: str = "127.0.0.1", port: int | None = None, log_level: str = "warning") -> Iterator[str]:
    """Serve `app` with uvicorn in a thread of this process; yields its base URL (no /v1)."""
    port = port or free_port(host)
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_keep_alive=KEEP_ALIVE_S)
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
