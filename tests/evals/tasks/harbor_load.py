"""Run in a Python >= 3.12 venv with harbor: load each task folder with Harbor's own Task and print, as JSON,
what evals/tasks reads from it. Harbor's deprecation warnings (allow_internet) go to stderr."""

import json
import sys

from harbor.models.task.task import Task

out = {}
for folder in sys.argv[1:]:
    task = Task(folder)
    env = task.config.environment
    out[task.paths.task_dir.name] = {
        "valid": Task.is_valid_dir(folder),
        "name": task.name,
        "instruction": task.instruction,
        "network": env.network_mode.value,
        "cpus": env.cpus,
        "memory_mb": env.memory_mb,
        "agent_timeout_s": task.config.agent.timeout_sec,
        "verifier_timeout_s": task.config.verifier.timeout_sec,
        "verifier_env": task.config.verifier.env,
        "solution_env": task.config.solution.env,
        "solve": task.paths.discovered_solve_path.name,
        "test": task.paths.discovered_test_path.name,
    }
print(json.dumps(out))
