"""Docker tests run against the real engine: this fixture starts it and builds the base image.

It runs the same setup step as `make system` (scripts/setup.d/10-docker.sh), so
a fresh root machine with docker.io and debootstrap installed needs nothing else.
"""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def docker_ready():
    proc = subprocess.run(
        ["bash", "scripts/setup.d/10-docker.sh"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        pytest.fail(f"Docker setup failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    from sandboxes.docker_container import docker_client

    return docker_client()


@pytest.fixture
def sandbox(docker_ready):
    from sandboxes.docker import DockerSandbox

    sb = DockerSandbox.start(client=docker_ready)
    yield sb
    sb.close()
