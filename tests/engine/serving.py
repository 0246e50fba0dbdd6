"""Run the engine's HTTP server on a free loopback port, in a thread of the test process."""

from __future__ import annotations

import contextlib

from prometheus_client.parser import text_string_to_metric_families

from engine.server import create_app
from engine.server.run import free_port, running

__all__ = ["free_port", "metrics", "running_server"]


@contextlib.contextmanager
def running_server(engine, names=("smollm2",), request_timeout_s: float | None = None, **limits):
    """Yields the base URL (no /v1) of a real uvicorn server over `engine`; `limits` go to create_app, and
    `request_timeout_s` is the headers' and the body's deadline."""
    if request_timeout_s is not None:
        limits["body_timeout_s"] = request_timeout_s
    timeouts = {} if request_timeout_s is None else {"request_timeout_s": request_timeout_s}
    with running(create_app(engine, list(names), **limits), **timeouts) as url:
        yield url


def metrics(text: str) -> dict[str, float]:
    """Flatten Prometheus text into {"name{label=value,...}": value}."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out
