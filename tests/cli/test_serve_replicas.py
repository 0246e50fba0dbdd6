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


def test_router_options_without_replicas_and_an_unknown_router_are_refused_before_anything_starts(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.serve", None)  # a check that started Ray Serve would fail on this instead
    for args, says in (
        (["--router", "session"], "give --replicas 2 or more"),
        (["--imbalance", "2"], "give --replicas 2 or more"),
        (["--replicas", "2", "--router", "nosuch"], "Unknown router 'nosuch': choose from round_robin"),
    ):
        result = CliRunner().invoke(app, ["serve", *args])
        assert result.exit_code == 2, result.output
        assert says in result.stderr and result.stdout == "", result.output
