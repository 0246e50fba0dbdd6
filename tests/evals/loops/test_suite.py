"""The loop-shaped suite, solved both ways by its scripted models: the same end states, far fewer model calls in
code mode; a replay of a code-mode run diverges nowhere; the capture task's program ends at its move."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.run.task import load_task
from agent.session import RunSpec, SandboxSpec, start
from core.events import InnerObserved, ModelReplied, ToolObserved
from core.presets import load_policy
from evals.loops import captures

LOOPS = Path(__file__).resolve().parents[3] / "evals" / "loops"


def solve(task: str, mode: str, out: Path, box: str = "local"):
    model = ScriptedModel.from_file(LOOPS / "solutions" / f"{task}.yaml")
    policy = load_policy(str(LOOPS / "policies" / f"{mode}.toml"))
    return start(
        RunSpec(load_task(str(LOOPS / "tasks" / f"{task}.yaml")), model, policy, out, sandbox=SandboxSpec(kind=box))
    )


def replies(run_dir: Path) -> int:
    return sum(isinstance(e, ModelReplied) for e in read_events(run_dir))


@pytest.mark.parametrize("task", ["rename", "todos", pytest.param("slowest", marks=pytest.mark.slow)])
def test_both_ways_reach_the_goal(tmp_path, task):
    calls, calls_dir = solve(task, "calls", tmp_path / "calls")
    code, code_dir = solve(task, "code", tmp_path / "code")
    assert calls.stop_reason == code.stop_reason == "goal_verified"
    assert replies(code_dir) == 1 < replies(calls_dir)
    assert [e.observation.tool for e in read_events(code_dir) if isinstance(e, ToolObserved)] == ["run_code"]


# slowest times every test of its task, each run: a long check, left out of the quick tier.
@pytest.mark.parametrize("task", ["rename", "todos", pytest.param("slowest", marks=pytest.mark.slow), captures.NAME])
def test_a_replay_of_a_code_mode_run_has_no_harness_divergence(tmp_path, task):
    if task == captures.NAME:
        model = ScriptedModel.from_file(LOOPS / "solutions" / "captures.yaml")
        policy = load_policy(str(LOOPS / "policies" / "code.toml"))
        run_dir = captures.play(model, policy, tmp_path / "run", SandboxSpec(kind="local")).run_dir
    else:
        _, run_dir = solve(task, "code", tmp_path / "run")
    report = replay(run_dir, tmp_path / "replay")
    assert report.harness == [] and report.replayed_stop == report.recorded_stop
    made = [e for e in read_events(run_dir) if isinstance(e, InnerObserved)]
    replayed = [e for e in read_events(report.replay_dir) if isinstance(e, InnerObserved)]
    assert len(replayed) == len(made) > 0


def test_the_capture_task_both_ways(tmp_path):
    best = captures.best_capture()
    for mode, box in (("calls", "none"), ("code", "local")):
        model = ScriptedModel.from_file(LOOPS / "solutions" / "captures.yaml")
        run = captures.play(
            model, load_policy(str(LOOPS / "policies" / f"{mode}.toml")), tmp_path / mode, SandboxSpec(kind=box)
        )
        assert captures.played(run.run_dir) == best == "e4d5"
        assert replies(run.run_dir) == (1 if mode == "code" else 3)
    [program] = [e.observation for e in read_events(run.run_dir) if isinstance(e, ToolObserved)]
    assert "stopped at its call to make_move" in program.text and "FEN r5k1/p4ppp/1p2p3/1p1P4/" in program.text
