"""Harbor's own task loader (harbor 0.26.0, in the Python >= 3.12 venv) reads the test tasks as evals/tasks does."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from evals.tasks.task import find_tasks
from tests.evals.tasks.conftest import TASKS

ROOT = Path(__file__).resolve().parents[3]
HARBOR_PYTHON = ROOT / ".venv-interop312" / "bin" / "python"


def harbor_reads(folders: list[Path]) -> dict:
    if not HARBOR_PYTHON.exists():
        pytest.skip(
            f"no Python >= 3.12 venv with harbor at {HARBOR_PYTHON.relative_to(ROOT)}: `make setup` makes one "
            "where a Python >= 3.12 exists (scripts/setup_interop312.sh)"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(HARBOR_PYTHON), str(Path(__file__).with_name("harbor_load.py")), *map(str, folders)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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
