"""`harness fork`: a run branched at a step, in the local sandbox: the parent's world and steps, then its own way.

Real files, the local sandbox, scripted models (tests/agent/forking.py). The Docker sandbox's forks are in
test_fork_docker.py, a chess game's in tests/evals/chess/test_chess_fork.py, kills during a fork in the crash
matrix.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.fork import fork
from agent.journal.fold import fold
from agent.journal.store import Journal, read_events, read_run_info
from agent.models.scripted import ScriptedModel
from agent.resume import resume
from agent.session import RunSpec, start
from cli.main import app
from core.context_policy import Compact
from core.events import Compacted, Forked, RunStopped
from core.policy import HarnessPolicy, StopPolicy
from core.presets import PRESETS
from tests.agent import forking
from tests.agent.helpers import call

POLICY = HarnessPolicy(name="plain", stop=StopPolicy(max_steps=60))


def parent_run(root: Path, policy: HarnessPolicy = POLICY, steps: int = forking.STEPS, watch: int = 15):
    """A finished run of the SWE-style script, and its world after step `watch` as the run went."""
    world = forking.WorldAfter(watch, root / "parent" / "workspace")
    summary, run_dir = start(
        RunSpec(forking.TASK, forking.model(steps), policy, root, run_id="parent", listeners=[world])
    )
    assert summary.stop_reason == "submitted" and summary.steps == steps
    return run_dir, world.files


@pytest.mark.slow  # a 30-step parent and its fork: end to end, about 10 s
def test_a_fork_at_step_15_of_30_has_the_parents_world_and_steps_and_goes_on_under_another_policy(tmp_path):
    parent, world = parent_run(tmp_path)
    made = fork(parent, 15, policy=PRESETS["lean"], model=forking.model(), out=tmp_path / "forks")

    assert made.summary is not None and made.summary.stop_reason == "submitted"
    assert made.summary.steps == forking.STEPS  # 15 inherited, 15 of its own
    events = read_events(made.run_dir)
    assert forking.inherited_part(made.run_dir) == forking.as_inherited(read_events(parent), 15)
    assert forking.branch_files(made.run_dir) == world  # every file, as the parent's after step 15
    assert len(world) > 8 and "./calc.py" in world and "./.git/HEAD" in world
    branch = next(e for e in events if isinstance(e, Forked))
    assert (branch.step, branch.parent, branch.reshaped) == (15, "parent", True)
    assert "15 writes run again and checked" not in branch.world  # reads are not run again
    info = read_run_info(made.run_dir)
    assert info.fork is not None and (info.fork.parent, info.fork.at_step) == ("parent", 15)
    assert info.policy["name"] == "lean" and info.fork.inherited == branch.inherited
    assert any("policy plain -> lean" in n for n in branch.notes)
    # Its own steps ran under lean: observations after the branch are masked in later prompts, not before.
    assert [e.step for e in events if e.type == "model_replied"] == list(range(1, forking.STEPS + 1))
    assert json.loads((made.run_dir / "summary.json").read_text())["stop_reason"] == "submitted"


@pytest.mark.slow
def test_a_fork_goes_on_from_the_parents_last_step_and_a_fork_of_a_fork_too(tmp_path):
    parent, _ = parent_run(tmp_path, steps=12, watch=3)
    first = fork(parent, 5, model=forking.model(12), out=tmp_path / "forks")
    assert first.summary is not None and first.summary.stop_reason == "submitted"
    world = forking.WorldAfter(8, tmp_path / "forks" / first.run_dir.name / "workspace")
    second = fork(first.run_dir, 8, model=forking.model(12), out=tmp_path / "forks2")
    assert second.summary is not None and second.summary.stop_reason == "submitted"
    events = read_events(second.run_dir)
    branches = [e for e in events if isinstance(e, Forked)]
    assert [(b.parent, b.step) for b in branches] == [("parent", 5), (first.run_dir.name, 8)]
    assert forking.inherited_part(second.run_dir) == forking.as_inherited(read_events(first.run_dir), 8)
    # The second fork's world after step 8 is the first fork's: the same files whatever way each came.
    redo = fork(first.run_dir, 8, model=forking.model(12), out=tmp_path / "forks3", run_id="again")
    assert forking.branch_files(redo.run_dir) == forking.branch_files(second.run_dir)
    assert world.files is None  # (the listener only watches a live run)


@pytest.mark.slow
def test_a_fork_under_another_context_policy_folds_its_inherited_steps_again(tmp_path):
    folding = HarnessPolicy(
        name="folding",
        stop=StopPolicy(max_steps=60),
        context=[Compact(every_steps=4, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")],
    )
    parent, _ = parent_run(tmp_path, steps=20, watch=3)  # append-only
    made = fork(parent, 10, policy=folding, model=forking.FromStep(20, 10), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"
    events = read_events(made.run_dir)
    at = next(i for i, e in enumerate(events) if isinstance(e, Forked))
    rebuilt = [e for e in events[at:] if isinstance(e, Compacted) and e.step == 10]
    assert [c.fold.last_step for c in rebuilt if c.fold] == [3, 7]  # after steps 4 and 8, keeping 1 step
    assert all(c.message.startswith("made again at the branch") for c in rebuilt)
    assert [f.last_step for f in fold(events).folds][:2] == [3, 7]  # the live steps fold on from there

    # and back: a folding parent forked under an append-only policy leaves its folds behind
    summary, folded = start(RunSpec(forking.TASK, forking.FromStep(20), folding, tmp_path / "p2", run_id="folded"))
    assert summary.stop_reason == "submitted" and fold(read_events(folded)).folds
    plain = fork(folded, 10, policy=POLICY, model=forking.FromStep(20, 10), out=tmp_path / "forks2")
    assert plain.summary is not None and plain.summary.stop_reason == "submitted"
    events = read_events(plain.run_dir)
    assert any(isinstance(e, Compacted) for e in forking_inherited(events)) and fold(events).folds == []


def forking_inherited(events):
    return events[: max(i for i, e in enumerate(events) if isinstance(e, Forked))]


def test_a_fork_whose_world_drifted_stops_with_the_step_and_the_difference(tmp_path):
    replies = [
        call("shell", command="echo fixed > a.txt"),
        call("shell", command="echo $RANDOM$RANDOM > r.txt && cat r.txt"),
        call("shell", command="cat a.txt"),
        call("submit", answer="done"),
    ]
    summary, parent = start(RunSpec(forking.TASK, ScriptedModel(replies), POLICY, tmp_path, run_id="p"))
    made = fork(parent, 3, model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "world_diverged"
    stop = [e for e in read_events(made.run_dir) if isinstance(e, RunStopped)][-1]
    assert stop.outcome["step"] == 2 and stop.outcome["tool"] == "shell"
    assert "step 2" in stop.message and "output differs" in stop.message
    diff = (made.run_dir / stop.outcome["diff"]).read_text()
    assert diff.startswith("--- parent") and "+" in diff
    assert not any(isinstance(e, Forked) for e in read_events(made.run_dir))
    assert resume(made.run_dir).summary is None  # it ended for good
    # Forked before the drifting step, the world is the parent's
    ok = fork(parent, 1, model=ScriptedModel(replies), out=tmp_path / "forks", run_id="ok")
    assert ok.summary is not None and ok.summary.stop_reason == "submitted"


def test_a_fork_of_a_run_that_listed_its_workspace_and_the_folder_above_rebuilds_the_same_world(tmp_path):
    """`ls -la` in a local sandbox shows the run directory as `..`: the fork's is made as the parent's was."""
    replies = [
        call("shell", command="ls -la"),
        call("shell", command="echo one > a.txt && ls -la"),
        call("submit", answer="done"),
    ]
    parent = forking.scripted_parent(tmp_path, replies, POLICY)
    made = fork(parent, 2, policy=PRESETS["lean"], model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted", made.summary
    assert made.run_dir.stat().st_mode == parent.stat().st_mode


def test_a_fork_made_a_while_after_its_parent_does_not_count_the_wait_as_work(tmp_path):
    """The time between the parent's step and the fork's branch is no step's: a wall-time budget the parent's
    steps and the fork's own fit in is not spent by the wait, and the fork's wall time leaves it out."""
    wait = 2.0
    replies = [
        call("shell", command="echo one > a.txt"),
        call("shell", command="cat a.txt"),
        call("submit", answer="ok"),
    ]
    parent = forking.scripted_parent(tmp_path, replies, POLICY)
    time.sleep(wait)
    budget = HarnessPolicy(name="budget", stop=StopPolicy(max_wall_s=wait))
    made = fork(parent, 1, policy=budget, model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted", made.summary
    assert made.summary.wall_s < wait


def test_a_fork_that_cannot_be_made_is_one_clear_error_and_makes_nothing(tmp_path):
    parent, _ = parent_run(tmp_path, steps=6, watch=2)
    runner = CliRunner()
    forks = tmp_path / "forks"

    beyond = runner.invoke(app, ["fork", str(parent), "--at-step", "7", "--out", str(forks)])
    assert beyond.exit_code == 2 and "finished steps are 1 to 6" in beyond.output
    assert "Traceback" not in beyond.output

    bad_rule = runner.invoke(app, ["fork", str(parent), "--at-step", "soon", "--out", str(forks)])
    assert bad_rule.exit_code == 2 and "step number" in bad_rule.output

    held = Journal(parent)  # another process writing it: a run still running
    try:
        running = runner.invoke(app, ["fork", str(parent), "--at-step", "2", "--out", str(forks)])
    finally:
        held.close()
    assert running.exit_code == 2 and "still running" in running.output

    lines = (parent / "events.jsonl").read_bytes().splitlines(keepends=True)
    lines[5] = lines[5].replace(b'"step":', b'"step": ')  # a flipped byte in the middle: its checksum fails
    (parent / "events.jsonl").write_bytes(b"".join(lines))
    damaged = runner.invoke(app, ["fork", str(parent), "--at-step", "2", "--out", str(forks)])
    assert damaged.exit_code == 2 and "damaged" in damaged.output and "--repair" in damaged.output

    assert not forks.exists()


@pytest.mark.parametrize("family", [False, True])
def test_the_fork_command_makes_a_fork_or_a_family_that_harness_ab_pairs(tmp_path, family):
    parent, _ = parent_run(tmp_path, steps=8, watch=2)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([r.model_dump(exclude_none=True) for r in forking.script(8)]))
    runner = CliRunner()
    args = ["fork", str(parent), "--at-step", "4", "--model", f"scripted:{script}", "--out", str(tmp_path / "f")]
    if not family:
        done = runner.invoke(app, [*args, "--policy", "lean"])
        assert done.exit_code == 0, done.output
        assert "submitted" in done.output and "fork:" in done.output
        return
    done = runner.invoke(app, [*args, "--policy", "lean", "--policy", "append_only", "--seeds", "0..2"])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["append_only", "lean"]
    assert all(len(list((tmp_path / "f" / p).iterdir())) == 3 for p in ("lean", "append_only"))
    assert "harness ab" in done.output
    compared = runner.invoke(
        app, ["ab", str(tmp_path / "f" / "append_only"), str(tmp_path / "f" / "lean"), "--out", str(tmp_path)]
    )
    assert compared.exit_code == 0, compared.output
    ab = json.loads(next(tmp_path.glob("ab-*/ab.json")).read_text())
    assert ab["pairs"] == 3


def test_harness_ab_pairs_forks_by_parent_branch_step_and_seed_not_by_when_they_started(tmp_path):
    parent, _ = parent_run(tmp_path, steps=8, watch=2)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([r.model_dump(exclude_none=True) for r in forking.script(8)]))
    runner = CliRunner()

    def family(step: int, *policies: str) -> None:
        args = ["fork", str(parent), "--at-step", str(step), "--model", f"scripted:{script}", "--seeds", "0..1"]
        done = runner.invoke(
            app, [*args, *(a for p in policies for a in ("--policy", p)), "--out", str(tmp_path / "f")]
        )
        assert done.exit_code == 0, done.output

    # Into the same folders, in an order that starts lean's forks at step 4 first and append_only's at step 2 first.
    family(4, "lean")
    family(2, "lean", "append_only")
    family(4, "append_only")
    compared = runner.invoke(
        app, ["ab", str(tmp_path / "f" / "append_only"), str(tmp_path / "f" / "lean"), "--out", str(tmp_path)]
    )
    assert compared.exit_code == 0, compared.output
    ab = json.loads(next(tmp_path.glob("ab-*/ab.json")).read_text())
    assert ab["pairs"] == 4 and not ab["unpaired_a"] and not ab["unpaired_b"]
    branches = [(row["a"]["branch"], row["a"]["seed"], row["b"]["branch"], row["b"]["seed"]) for row in ab["rows"]]
    assert all(a == b and seed_a == seed_b for a, seed_a, b, seed_b in branches)
    assert sorted((tuple(a), seed) for a, seed, _, _ in branches) == [
        (("parent", 2), 0),
        (("parent", 2), 1),
        (("parent", 4), 0),
        (("parent", 4), 1),
    ]


def test_a_fork_replays_without_divergence_and_its_world_again_when_executed(tmp_path):
    from agent.recorded.replay import replay

    parent, _ = parent_run(tmp_path, steps=12, watch=3)
    made = fork(parent, 6, policy=PRESETS["lean"], model=forking.model(12), out=tmp_path / "forks")
    played = replay(made.run_dir, out=tmp_path / "replays")
    assert played.harness == [] and played.replayed_stop == played.recorded_stop == "submitted"
    assert played.prompts == 12 and played.observations == 12
    executed = replay(made.run_dir, out=tmp_path / "replays", execute=True)
    assert executed.world == [] and executed.replayed_stop == "submitted"
    assert forking.branch_files(executed.replay_dir) == forking.branch_files(made.run_dir)
