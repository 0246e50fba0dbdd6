"""The code tools in a Docker run: the repository lives in the container, and leaves it only as archives
read through the sandbox; edits made in the container are searched at the next call."""

from __future__ import annotations

import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, start
from core.presets import PRESETS
from tests.agent.helpers import call, calls
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)
from tests.tools.code.repos import SHOP

COMMIT = "git init -q && git add -A && git -c user.email=t@example.com -c user.name=t commit -qm base"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def test_search_find_and_map_work_in_a_docker_run_and_see_edits(docker_ready, tmp_path):  # noqa: F811
    task = Task(id="shop-docker", prompt="Cart.apply_discount applies the rate wrongly.", files=SHOP, setup=[COMMIT])
    model = ScriptedModel(
        [
            call("search_code", query="discount rate"),
            call(
                "shell",
                command="ln -s /etc/passwd shop/passwd.py && printf 'def rebate_for_vip():\\n    pass\\n' > shop/vip.py",
            ),
            calls(("find_symbol", {"name": "rebate_for_vip"})),
            call("repo_map", focus="vip", budget=200),
            call("submit", answer="done"),
        ]
    )
    summary, run_dir = start(
        RunSpec(task, model, PRESETS["code_search"], tmp_path / "runs", SandboxSpec(kind="docker"))
    )
    assert summary.stop_reason == "submitted"
    seen = {e.observation.tool: e.observation.text for e in read_events(run_dir) if e.type == "tool_observed"}
    assert seen["search_code"].startswith("Files for 'discount rate' in /workspace at ")
    assert seen["search_code"].splitlines()[1] == "1. shop/pricing.py"
    assert "shop/vip.py:1  function rebate_for_vip: def rebate_for_vip():" in seen["find_symbol"]
    assert seen["repo_map"].splitlines()[1] == "shop/vip.py:" and "passwd" not in seen["repo_map"]
    opening = [e.message.text for e in read_events(run_dir) if e.type == "message"][1]
    assert "A map of the repository at /workspace" in opening
    executed = replay(run_dir, out=tmp_path / "replays", execute=True)
    assert executed.harness == [] and executed.replayed_stop == "submitted"
    assert executed.world == [], [d.diff for d in executed.world]
