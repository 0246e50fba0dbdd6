"""Start a server: load the model, build the app, run uvicorn."""

import logging
from pathlib import Path

import uvicorn

from engine.config import EngineConfig
from engine.engine import Engine
from engine.server.app import create_app

DEFAULT_NAME = "smollm2"


def serve(
    model: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    kv_cache_bytes: int = 1 << 30,
    max_model_len: int | None = None,
    num_threads: int | None = None,
    name: str | None = None,
    log_level: str = "info",
    weights: str = "float32",
) -> None:
    """Serve `model` (a GGUF file or model folder; None: the embedded SmolLM2-135M-Instruct)
    under `name` (default: "smollm2" for the embedded model, else the file's stem)."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = EngineConfig(kv_cache_bytes=kv_cache_bytes, max_model_len=max_model_len, num_threads=num_threads, weights=weights)
    engine = Engine(model, config)
    names = [name or (Path(model).stem if model else DEFAULT_NAME)]
    app = create_app(engine, names)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        engine.shutdown()


if __name__ == "__main__":
    serve()
