"""The verifier, Harbor's way: after the agent, tests/ goes to /tests, test.sh runs, and the reward is read
from /logs/verifier/reward.json (a JSON object of numbers, or one number) or, without it, reward.txt (one
number).

The task's reward is the JSON's `reward` key, or its only value, or the text file's number (Harbor's
one-key convention). A task is resolved at reward 1.0 exactly: a reward of 0.5 is recorded as 0.5 and
counts as unresolved. A JSON of several keys without `reward` keeps them all and has no reward. No
reward file, an unreadable one or a test.sh past its timeout is a verifier error (resolved false,
reward none), as Harbor makes it a trial exception.
"""

from __future__ import annotations

import json
import math
import shlex

from pydantic import BaseModel

from evals.swe.infra import InfraFailure
from evals.tasks.sandbox import host_value
from evals.tasks.task import HarborTask
from evals.tasks.upload import upload
from sandboxes.base import Sandbox

TESTS_DIR = "/tests"
VERIFIER_DIR = "/logs/verifier"
TEST_STDOUT = f"{VERIFIER_DIR}/test-stdout.txt"


class Verdict(BaseModel):
    """What grade.json holds for a task (keyed by its id), and what summary.json's outcome gets."""

    resolved: bool
    reward: float | None = None
    rewards: dict[str, float] = {}
    test_exit_code: int | None = None
    error: str | None = None  # the environment or the verifier failed; not the agent's doing
    infra_failure: InfraFailure | None = None  # the error was the machine's (build, start, daemon): tried again


def verify(task: HarborTask, box: Sandbox, workdir: str) -> tuple[Verdict, str]:
    """Upload tests/, run test.sh in `workdir` with [verifier].env, read the reward; also test.sh's output."""
    box.exec(f"rm -f {VERIFIER_DIR}/reward.txt {VERIFIER_DIR}/reward.json; mkdir -p {VERIFIER_DIR}", timeout=60)
    upload(box, task.tests_dir, TESTS_DIR)
    env = " ".join(f"{k}={shlex.quote(host_value(v))}" for k, v in task.config.verifier.env.items())
    command = f"(cd {shlex.quote(workdir)} && {env + ' ' if env else ''}bash {TESTS_DIR}/test.sh > {TEST_STDOUT} 2>&1)"
    result = box.exec(command, timeout=task.verifier_timeout_s)
    output = _read(box, TEST_STDOUT) or ""
    if result.timed_out:
        return Verdict(resolved=False, error=f"test.sh ran past its {task.verifier_timeout_s:g} s timeout"), output
    verdict = read_reward(_read(box, f"{VERIFIER_DIR}/reward.json"), _read(box, f"{VERIFIER_DIR}/reward.txt"))
    return verdict.model_copy(update={"test_exit_code": result.exit_code}), output


def _read(box: Sandbox, path: str) -> str | None:
    try:
        return box.read_file(path).decode("utf-8", "replace")
    except OSError:
        return None


def read_reward(reward_json: str | None, reward_txt: str | None) -> Verdict:
    """The verdict from the reward files' texts (None: the file is not there); JSON wins, as in Harbor."""
    if reward_json is not None:
        try:
            data = json.loads(reward_json)
        except ValueError:
            return Verdict(resolved=False, error=f"reward.json is not JSON: {reward_json[:200]!r}")
        rewards = data if isinstance(data, dict) else {"reward": data}
        bad = [k for k, v in rewards.items() if not _number(v)]
        if bad:
            return Verdict(resolved=False, error=f"reward.json has values that are not finite numbers: {bad}")
        values = {k: float(v) for k, v in rewards.items()}
        reward = values.get("reward", next(iter(values.values())) if len(values) == 1 else None)
        return Verdict(resolved=reward == 1.0, reward=reward, rewards=values)
    if reward_txt is not None:
        try:
            reward = float(reward_txt.strip())
        except ValueError:
            return Verdict(resolved=False, error=f"reward.txt holds no number: {reward_txt[:200]!r}")
        if not math.isfinite(reward):
            return Verdict(resolved=False, error=f"reward.txt holds a non-finite reward {reward}")
        return Verdict(resolved=reward == 1.0, reward=reward, rewards={"reward": reward})
    return Verdict(resolved=False, error=f"test.sh wrote no reward file ({VERIFIER_DIR}/reward.txt or reward.json)")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
