"""`--otel-endpoint URL`, on every command that runs agents: each run sends OpenTelemetry spans to URL as it goes
(agent.telemetry). It sets OpenTelemetry's own traces-endpoint variable, so runs in other processes of this
machine (a batch's workers, Ray's) send theirs too."""

from __future__ import annotations

import os
from urllib.parse import urlparse

import typer

from agent.telemetry import TRACES_ENDPOINT_ENV
from core.errors import HarnessError

OTEL_ENDPOINT = typer.Option(
    None,
    "--otel-endpoint",
    help="Send each run's OpenTelemetry spans (GenAI conventions) to this OTLP/HTTP endpoint as it goes, e.g. "
    "http://localhost:6006 (Phoenix) or http://localhost:4318 (a collector); /v1/traces is added unless given.",
)


def traces_url(url: str) -> str:
    """The OTLP/HTTP traces endpoint for a base URL or a full one; a URL that is not http(s) is an error."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise HarnessError(
            f"--otel-endpoint {url!r} is not an http(s) URL; give the OTLP/HTTP endpoint of your backend, "
            "e.g. http://localhost:6006 for Phoenix or http://localhost:4318 for an OpenTelemetry collector."
        )
    return url if parsed.path.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"


def use_otel(url: str | None) -> None:
    if url is not None:
        os.environ[TRACES_ENDPOINT_ENV] = traces_url(url)
