"""The sandbox abuse battery of benchmarks/faults_sandbox.py, run against the real engine and the local sandbox: every abuse
contained and reported clearly."""

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _battery():
    spec = importlib.util.spec_from_file_location("faults_sandbox", ROOT / "benchmarks" / "faults_sandbox.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["faults_sandbox"] = module
    spec.loader.exec_module(module)
    return module


def test_every_sandbox_abuse_is_contained_with_a_clear_observation(docker_ready):
    battery = _battery()
    before = os.environ.get("OPENAI_API_KEY")
    rows = battery.sandbox_battery(docker_ready)
    assert [r.abuse for r in rows] == [b[0] for b in battery.BATTERY]
    failed = [r for r in rows if not (r.contained and r.clear)]
    assert not failed, "\n".join(f"{r.abuse}: contained={r.contained} clear={r.clear}: {r.observation}" for r in failed)
    assert os.environ.get("OPENAI_API_KEY") == before  # the host's environment is as it was


def test_the_abuses_aimed_at_a_persistent_shell_are_contained_in_the_local_sandbox_too():
    battery = _battery()
    rows = battery.local_battery()
    assert [r.abuse for r in rows] == [b[0] for b in battery.LOCAL_BATTERY]
    failed = [r for r in rows if not (r.contained and r.clear)]
    assert not failed, "\n".join(f"{r.abuse}: contained={r.contained} clear={r.clear}: {r.observation}" for r in failed)
