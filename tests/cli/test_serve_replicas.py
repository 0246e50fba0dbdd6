"""`harness serve --replicas` where Ray Serve is missing: a message naming what to install,
before any model is loaded. Ray Serve is hidden from the import system (this machine has it)."""

from __future__ import annotations

import sys

from typer.testing import CliRunner

from cli.main import app


def test_serve_replicas_without_ray_serve_says_what_to_install_hiding_ray_serve(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.serve", None)  # None: `import ray.serve` raises ImportError
    monkeypatch.delitem(sys.modules, "engine.server.replicas", raising=False)
    result = CliRunner().invoke(app, ["serve", "--replicas", "2"])
    assert result.exit_code == 2, result.output
    assert "harness[serve-replicas]" in result.output and "without --replicas" in result.output
