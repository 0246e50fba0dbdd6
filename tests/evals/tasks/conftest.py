import shutil
from pathlib import Path

import pytest

from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)

TASKS = Path(__file__).with_name("tasks")
# The test tasks build FROM a public image, as Terminal-Bench's do; here nothing is pulled.
REWRITES = {"python:3.13-slim-bookworm": "harness-base:bookworm-1"}


@pytest.fixture
def task_copy(tmp_path):
    """A copy of one test task, with task.toml's text changed by `replace` pairs."""

    def copy(name: str, *replace: tuple[str, str]) -> Path:
        folder = tmp_path / "dataset" / name
        shutil.copytree(TASKS / name, folder)
        toml = folder / "task.toml"
        text = toml.read_text()
        for old, new in replace:
            assert old in text
            text = text.replace(old, new)
        toml.write_text(text)
        return folder

    return copy
