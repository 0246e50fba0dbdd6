"""The quick tier (`pytest --quick`, `make quick`) leaves out what needs Docker, Ray or the model weights, and
a test that reaches one of them without its mark fails there, saying which mark it lacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# Each test runs a small suite in a child pytest (half a minute): `make test` runs them, `make quick` does not.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

TESTS = """
import socket
import subprocess

import pytest

from engine.weights import default_model_path


def test_plain():
    assert True


def test_reads_the_model_unmarked():
    with open(default_model_path(), "rb") as f:
        f.read(4)


@pytest.mark.model
def test_reads_the_model_marked():
    with open(default_model_path(), "rb") as f:
        f.read(4)


def test_reaches_docker_unmarked():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect("/var/run/docker.sock")


def test_starts_harness_serve_unmarked():
    subprocess.run(["harness", "serve", "--port", "1"], check=False)


def test_a_fixture_brings_the_mark(docker_ready):
    raise AssertionError("never run by the quick tier")


@pytest.fixture
def docker_ready():
    return None
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    """A small suite under this checkout's conftest, run in a child interpreter: audit hooks stay for good."""
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    pytester.makeconftest("from tests.conftest import *  # noqa: F403\n")
    pytester.makepyfile(test_tiered=TESTS)
    return pytester


def outcomes(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("-p", "no:cacheprovider", "-rf", *args)


def test_the_quick_tier_runs_only_unmarked_tests_and_fails_those_that_reach_what_they_lack(suite):
    if not (Path("/var/run/docker.sock").exists() or Path("/run/docker.sock").exists()):
        pytest.skip("no Docker socket here to be reached")
    result = outcomes(suite, "--quick")
    result.assert_outcomes(passed=1, failed=3, deselected=2)
    out = result.stdout.str()
    assert "test_reads_the_model_unmarked opened the model file" in out and "pytest.mark.model" in out
    assert "test_reaches_docker_unmarked connected to" in out and "docker_ready" in out
    assert "test_starts_harness_serve_unmarked started `harness serve" in out


def test_without_quick_nothing_is_watched(suite):
    result = outcomes(suite, "-k", "model")
    result.assert_outcomes(passed=2)
