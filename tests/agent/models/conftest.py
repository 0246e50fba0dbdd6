"""The `harness serve` the end-to-end tests of this package (test_end_to_end, test_memory_sdks) talk to."""

from tests.agent.models.harness_serve import server  # noqa: F401  (the fixture)
