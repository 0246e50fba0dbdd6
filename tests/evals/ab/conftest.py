from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)
