"""A Docker run forked at step 15 of 30: the fork's container holds every file of the parent's after step 15,
whether it started from a checkpoint kept for forks (plus the writes after it) or from the image and setup; a
code-mode run's programs after the checkpoint run again in the fork's container."""

from __future__ import annotations

import pytest

from agent.fork import fork
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.session import RunSpec, SandboxSpec, start
from core.events import Forked, SandboxOpened
from core.policy import CheckpointPolicy, HarnessPolicy, StopPolicy
from core.presets import PRESETS
from sandboxes.docker_options import RUN_LABEL
from sandboxes.docker_runs import CHECKPOINT_LABEL, checkpoints
from tests.agent import forking
from tests.agent.helpers import call
from tests.agent.test_fork_combos import CODE, PROGRAMS
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)


@pytest.fixture
def no_leftovers(docker_ready, tmp_path):  # noqa: F811
    """Every container and checkpoint image of the test's runs is gone afterwards."""
    yield
    prefix = str(tmp_path.resolve())
    for image in docker_ready.images.list(filters={"label": CHECKPOINT_LABEL}):
        if (image.labels or {}).get(RUN_LABEL, "").startswith(prefix):
            docker_ready.images.remove(image.id, force=True)
    left = docker_ready.containers.list(all=True, filters={"label": RUN_LABEL}, ignore_removed=True)
    assert not [c.name for c in left if c.labels.get(RUN_LABEL, "").startswith(prefix)]


@pytest.mark.parametrize("fork_every", [4, None], ids=["from-a-checkpoint", "from-the-setup"])
def test_a_docker_fork_at_step_15_of_30_holds_the_parents_files(tmp_path, no_leftovers, fork_every):
    policy = HarnessPolicy(
        name="plain", stop=StopPolicy(max_steps=60), checkpoint=CheckpointPolicy(fork_every=fork_every)
    )
    world = forking.WorldAfter(15)
    summary, parent = start(
        RunSpec(
            forking.TASK, forking.model(), policy, tmp_path, SandboxSpec(kind="docker"), run_id="p", listeners=[world]
        )
    )
    assert summary.stop_reason == "submitted" and summary.steps == forking.STEPS, summary.message
    kept = sorted(c.step for c in checkpoints(parent) if c.kept)
    assert kept == ([4, 8, 12, 16, 20, 24, 28] if fork_every else [])  # kept after the run ended

    made = fork(parent, 15, policy=PRESETS["lean"], model=forking.model(), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted", made.summary
    assert made.summary.steps == forking.STEPS
    events = read_events(made.run_dir)
    assert forking.inherited_part(made.run_dir) == forking.as_inherited(read_events(parent), 15)
    assert world.files is not None and forking.branch_files(made.run_dir) == world.files
    assert "./calc.py" in world.files and "./.git/HEAD" in world.files
    opened = next(e for e in events if isinstance(e, SandboxOpened))
    branch = next(e for e in events if isinstance(e, Forked))
    if fork_every:
        assert (opened.how, opened.checkpoint_step) == ("checkpoint", 12)
        assert "after step 12, then 3 writes run again" in branch.world  # steps 13, 14 and 15
    else:
        assert opened.how == "started" and "the task's setup, then 13 writes" in branch.world


def test_a_docker_fork_of_a_code_mode_run_runs_its_programs_again_in_the_container(tmp_path, no_leftovers):

    third = "write_file(path='b.txt', content='three\\n')\nopen('own3.txt', 'w').write('3\\n')\nprint(shell(command='cat a.txt b.txt'))"
    replies = [*(call("run_code", code=p) for p in [*PROGRAMS[:2], third, PROGRAMS[2]]), call("submit", answer="done")]
    policy = CODE.model_copy(update={"checkpoint": CheckpointPolicy(fork_every=2)})
    world = forking.WorldAfter(3)
    summary, parent = start(
        RunSpec(
            forking.TASK,
            ScriptedModel(replies),
            policy,
            tmp_path,
            SandboxSpec(kind="docker"),
            run_id="p",
            listeners=[world],
        )
    )
    assert summary.stop_reason == "submitted", summary.message
    made = fork(parent, 3, model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted", made.summary
    assert world.files is not None and forking.branch_files(made.run_dir) == world.files
    assert {"./own.txt", "./own3.txt", "./b.txt"} <= set(world.files)
    branch = next(e for e in read_events(made.run_dir) if isinstance(e, Forked))
    assert "after step 2, then 3 writes run again" in branch.world  # step 3's program, its write_file and shell
