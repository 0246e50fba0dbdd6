"""Harbor's own task loader (harbor 0.26.0, in the Python >= 3.12 venv) reads the test tasks as evals/tasks does."""

from pathlib import Path

from evals.tasks.task import find_tasks
from tests.evals.tasks.conftest import TASKS
from tests.harbor_venv import run_with_harbor


def harbor_reads(folders: list[Path]) -> dict:
    return run_with_harbor(Path(__file__).with_name("harbor_load.py"), *folders)


def test_harbor_loads_every_test_task_as_we_do():
    ours = {t.instance_id: t for t in find_tasks([TASKS])}
    theirs = harbor_reads([t.folder for t in ours.values()])
    assert set(theirs) == set(ours)
    for name, task in ours.items():
        seen = theirs[name]
        assert seen["valid"] and (seen["solve"], seen["test"]) == ("solve.sh", "test.sh")
        assert seen["name"] == task.name
        assert seen["instruction"] == task.instruction
        assert seen["network"] == task.network("agent")
        assert seen["cpus"] == task.config.environment.cpus
        assert (f"{seen['memory_mb']}m" if seen["memory_mb"] else None) == task.memory()
        assert (seen["agent_timeout_s"], seen["verifier_timeout_s"]) == (task.agent_timeout_s, task.verifier_timeout_s)
        assert seen["verifier_env"] == task.config.verifier.env
        assert seen["solution_env"] == task.config.solution.env
