"""`harness sandbox build` and `prune` fail as every command does: one `error:` line, exit 2, no traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.main import app


@pytest.mark.parametrize(
    ("args", "said"),
    [(["sandbox", "build"], "The base image harness-base"), (["sandbox", "prune"], "Nothing was pruned")],
)
def test_no_docker_engine_is_one_error_line_and_exit_2(monkeypatch, args, said):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # the discard port: no Docker engine answers there
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: {said}") and "no Docker engine answers" in line
    assert "Traceback" not in result.output
