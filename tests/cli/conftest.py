from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real Docker engine, started once)
