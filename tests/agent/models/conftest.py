"""The `harness serve` the end-to-end tests of this package talk to."""

import pytest

from tests.agent.models.harness_serve import harness_serve


@pytest.fixture(scope="package")
def server(model_weights):
    """One server for test_end_to_end and test_memory_sdks, started once (each start loads the model: 9 s on a
    quiet machine, 20 s under `make test`) and stopped when this package's tests end. Their tests only send it
    requests: none asserts on a fresh server or on its closing."""
    with harness_serve("--kv-cache-mb", "256", "--max-model-len", "4096") as url:
        yield url
