"""`harness serve` as a real subprocess on a free loopback port, for the tests that talk to it over HTTP."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.engine.serving import free_port

HARNESS = str(Path(sys.executable).parent / "harness")


@contextlib.contextmanager
def harness_serve(*flags: str) -> Iterator[str]:
    """Yields the server's base URL (no /v1) once /health answers; `flags` go to `harness serve`."""
    port = free_port()
    proc = subprocess.Popen(
        [HARNESS, "serve", "--port", str(port), *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("harness serve did not come up:\n" + (proc.stdout.read() if proc.stdout else ""))
        time.sleep(0.5)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="package")
def server(model_weights):
    """One server for a package's tests that only send it requests (none asserts on a fresh server or on its
    closing): started once (each start loads the model: 9 s on a quiet machine, 20 s under `make test`) and
    stopped when the package's tests end. A package's conftest.py, or a module, imports it."""
    with harness_serve("--kv-cache-mb", "256", "--max-model-len", "4096") as url:
        yield url
