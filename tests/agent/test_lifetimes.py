"""Whoever opens a resource closes it: a run closes the model it loaded, its sandbox and its MCP servers, on
every way out of it (the end, a failure, Ctrl-C); a model passed in is its maker's to close."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import agent.session
from agent.models.scripted import ScriptedModel
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, open_run, start
from core.policy import HarnessPolicy
from sandboxes.local import LocalSandbox
from tests.agent.helpers import call
from tests.tools.mcp.conftest import stdio


class Tracked(ScriptedModel):
    """A scripted model that counts its closes, handed out by a `load_model` the test replaces."""

    def __init__(self, replies, name: str = "scripted:tracked"):
        super().__init__(replies, name)
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class TrackedBox(LocalSandbox):
    closed = 0

    def close(self) -> None:
        TrackedBox.closed += 1
        super().close()


@pytest.fixture
def loaded(monkeypatch):
    """Every model string a run loads gives a Tracked model; the list holds them in order."""
    made: list[Tracked] = []

    def load(spec: str, return_within_s: float | None = None) -> Tracked:
        made.append(Tracked([call("submit", answer="done")]))
        return made[-1]

    monkeypatch.setattr("agent.models.load_model", load)
    TrackedBox.closed = 0
    return made


def mcp_children(script: str) -> list[int]:
    """This process's children running `script` (an MCP server started over stdio)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        ppid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))
        if ppid == os.getpid() and script in cmdline:
            found.append(int(entry.name))
    return found


def spec(tmp_path: Path, model, policy: HarnessPolicy | None = None, sandbox=None) -> RunSpec:
    return RunSpec(Task(prompt="Say done."), model, policy or HarnessPolicy(), tmp_path, sandbox=sandbox or TrackedBox)


def test_a_run_closes_the_model_it_loaded_when_it_ends(tmp_path, loaded):
    summary, _ = start(spec(tmp_path, "scripted:any.yaml"))
    assert summary.stop_reason == "submitted"
    assert [m.closed for m in loaded] == [1] and TrackedBox.closed == 1


def test_ctrl_c_inside_a_run_closes_its_model_sandbox_and_mcp_servers(tmp_path, loaded):
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py", approve="never")])
    with pytest.raises(KeyboardInterrupt), open_run(spec(tmp_path, "scripted:any.yaml", policy)) as session:
        assert mcp_children("basic.py"), "the MCP server runs while the run is open"
        assert session.model is loaded[0] and not loaded[0].closed
        raise KeyboardInterrupt  # as a Ctrl-C landing after the loop, while a batch collects the run's patch
    assert [m.closed for m in loaded] == [1] and TrackedBox.closed == 1
    assert not mcp_children("basic.py")


def test_a_run_whose_sandbox_cannot_start_still_closes_its_model(tmp_path, loaded):
    def broken(workspace: Path):
        raise RuntimeError("no sandbox today")

    with (
        pytest.raises(Exception, match="no sandbox today"),
        open_run(spec(tmp_path, "scripted:any.yaml", sandbox=broken)),
    ):
        pass
    assert [m.closed for m in loaded] == [1]


def test_a_model_whose_window_refuses_the_policy_is_closed_before_anything_is_written(tmp_path, loaded, monkeypatch):
    monkeypatch.setattr(agent.session, "context_window", lambda client, params: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        start(spec(tmp_path, "scripted:any.yaml"))
    assert [m.closed for m in loaded] == [1] and not any(tmp_path.iterdir())


def test_a_model_passed_in_is_left_open_for_its_maker(tmp_path, loaded):
    mine = Tracked([call("submit", answer="done")])
    start(spec(tmp_path, mine))
    assert mine.closed == 0 and not loaded and TrackedBox.closed == 1


def test_resume_closes_the_model_it_loaded(tmp_path, loaded):
    # The first run stops asking for approval, so resume has a step to go on with.
    policy = HarnessPolicy(mcp=[stdio("notes", "basic.py")])
    first = Tracked([call("notes__write_note", text="x")])
    summary, run_dir = start(spec(tmp_path, first, policy, sandbox=SandboxSpec()))
    assert summary.stop_reason == "awaiting_approval"
    resumed = resume(run_dir, "scripted:any.yaml")
    assert resumed.summary is not None and [m.closed for m in loaded] == [1]
