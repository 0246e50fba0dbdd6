"""search_code, find_symbol and repo_map in real runs: their observations, the opening map, a kill after a
search and the resume, and a replay that matches the recording."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, start
from core.presets import PRESETS
from sandboxes.local import LocalSandbox
from tests.agent.helpers import call, calls
from tests.tools.code.repos import SHOP, commit_all, write
from tools.base import ToolContext
from tools.code.tools import FIND_SYMBOL, REPO_MAP, SEARCH_CODE, MapArgs, SearchArgs, SymbolArgs

HARNESS = str(Path(sys.executable).parent / "harness")
TASK = Task(id="shop", prompt="Cart.apply_discount applies the discount rate wrongly.", files=SHOP)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def observations(run_dir: Path) -> dict[str, str]:
    return {e.observation.tool: e.observation.text for e in read_events(run_dir) if e.type == "tool_observed"}


def observed(run_dir: Path) -> list[tuple[str, str]]:
    return [(e.observation.tool, e.observation.text) for e in read_events(run_dir) if e.type == "tool_observed"]


def test_the_three_tools_answer_in_a_local_run_and_the_opening_carries_a_map(tmp_path):
    model = ScriptedModel(
        [
            call("search_code", query="discount rate applied to the total"),
            calls(("find_symbol", {"name": "clamp"})),
            call("repo_map", focus="shipping", budget=256),
            call("submit", answer="done"),
        ]
    )
    summary, run_dir = start(RunSpec(TASK, model, PRESETS["code_search"], tmp_path / "runs"))
    assert summary.stop_reason == "submitted"
    seen = observations(run_dir)
    assert seen["search_code"].splitlines()[1] == "1. shop/pricing.py"
    assert "10-12 Cart.apply_discount: def apply_discount(self, total, rate):" in seen["search_code"]
    assert "shop/util.py:1  function clamp: def clamp(x, lo, hi):" in seen["find_symbol"]
    assert "shop/pricing.py:12: return clamp(total * (1 - rate), 0, total)" in seen["find_symbol"]
    assert seen["repo_map"].splitlines()[1] == "shop/shipping.py:"
    opening = [e.message.text for e in read_events(run_dir) if e.type == "message"][1]
    assert opening.startswith(TASK.prompt) and "A map of the repository" in opening
    assert "        def apply_discount(self, total, rate):  (10)" in opening
    info = json.loads((run_dir / "run.json").read_text())
    assert info["task"]["repo_map"] in opening  # kept in the run's task: a resume and a replay send the same
    assert {"search_code", "find_symbol", "repo_map"} <= {t["name"] for t in info["tools"]}


def test_an_empty_workspace_and_a_vanished_one_are_one_clear_observation(tmp_path):
    box = LocalSandbox(tmp_path / "empty")
    try:
        ctx = ToolContext(sandbox=box, timeout_s=30)
        result = SEARCH_CODE.run(SearchArgs(query="anything"), ctx)
        assert result.ok and result.text == f"The workspace {box.workdir} holds no source file to search."
        write(Path(box.workdir), {"logo.py": b"\x89PNG\x00\x00"})
        assert "(1 binary, 0 too large)" in REPO_MAP.run(MapArgs(), ctx).text
        (Path(box.workdir) / "logo.py").unlink()
        Path(box.workdir).rmdir()
        gone = FIND_SYMBOL.run(SymbolArgs(name="x"), ctx)
        assert not gone.ok and gone.text.startswith("The workspace could not be indexed:")
    finally:
        box.close()


def test_find_symbol_narrows_by_class_and_says_what_exists(tmp_path):
    repo = write(tmp_path / "repo", SHOP)
    commit_all(repo)
    box = LocalSandbox(repo)
    try:
        ctx = ToolContext(sandbox=box, timeout_s=30)
        assert "method Cart.total" in FIND_SYMBOL.run(SymbolArgs(name="Cart.total"), ctx).text
        assert (
            "total is defined as: Cart.total (shop/pricing.py)"
            in FIND_SYMBOL.run(SymbolArgs(name="Order.total"), ctx).text
        )
        assert "Names that contain it: parse_money" in FIND_SYMBOL.run(SymbolArgs(name="money"), ctx).text
    finally:
        box.close()


# Runs the task with the code_search policy and SIGKILLs its own process the moment the journal holds the
# first search_code observation: the kill lands between two steps, at the same place every time.
KILLED_AFTER_SEARCH = """
import os, signal, sys
from pathlib import Path
from agent.models.scripted import ScriptedModel
from agent.session import RunSpec, start
from agent.run.task import Task
from core.presets import PRESETS

def die(event):
    if event.type == "tool_observed" and event.observation.tool == "search_code":
        os.kill(os.getpid(), signal.SIGKILL)

task = Task.model_validate_json(Path(sys.argv[1]).read_text())
start(RunSpec(task, ScriptedModel.from_file(sys.argv[2]), PRESETS["code_search"], Path(sys.argv[3]), listeners=(die,)))
"""


def test_a_run_killed_after_a_search_resumes_and_replays_as_recorded(tmp_path):
    steps = [
        call("search_code", query="discount rate"),
        call("write_file", path="shop/extra.py", content="def added_later():\n    pass\n"),
        call("search_code", query="added later"),
        call("submit", answer="done"),
    ]
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([r.model_dump(mode="json", exclude_defaults=True) for r in steps]))
    task = tmp_path / "task.json"
    task.write_text(TASK.model_dump_json())
    out = tmp_path / "runs"
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_SEARCH, str(task), str(script), str(out)], timeout=300)
    assert killed.returncode == -signal.SIGKILL
    [run_dir] = out.iterdir()
    assert [e.type for e in read_events(run_dir)][-1] == "tool_observed"
    done = subprocess.run([HARNESS, "resume", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    events = read_events(run_dir)
    searches = [e.observation.text for e in events if e.type == "tool_observed" and e.observation.tool == "search_code"]
    assert len(searches) == 2 and searches[0].splitlines()[1] == "1. shop/pricing.py"
    assert searches[1].splitlines()[1] == "1. shop/extra.py"  # the file written after the resume is searched
    # the same text an uninterrupted run saw: the resumed process built its index anew, and says nothing of it
    _, whole = start(RunSpec(TASK, ScriptedModel(steps), PRESETS["code_search"], tmp_path / "whole"))
    assert [s.replace(str(run_dir), "<run>") for s in searches] == [
        s.replace(str(whole), "<run>") for t, s in observed(whole) if t == "search_code"
    ]
    assert [e.reason for e in events if e.type == "run_stopped"][-1] == "submitted"
    report = replay(run_dir, tmp_path / "replay")
    assert report.harness == [] and report.replayed_stop == "submitted"
