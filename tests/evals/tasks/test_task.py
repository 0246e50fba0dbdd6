"""Reading Harbor task folders: what a run takes from task.toml, and what it refuses."""

import pytest

from core.errors import HarnessError
from evals.tasks.image import from_images, parse_base_images, rewrite_from
from evals.tasks.task import find_tasks, load_task, strip_canary
from evals.tasks.verifier import read_reward
from tests.evals.tasks.conftest import TASKS


def test_a_dataset_folder_holds_its_tasks_and_a_task_folder_is_one():
    assert [t.instance_id for t in find_tasks([TASKS])] == ["half-reward", "memory-limit", "multi-file", "network-off"]
    (one,) = find_tasks([TASKS / "multi-file"])
    assert one.name == "harness-tests/multi-file"


def test_task_toml_gives_network_limits_and_timeouts():
    net = load_task(TASKS / "network-off")
    assert net.network("agent") == net.network("verifier") == "no-network"
    assert net.memory() == "512m" and net.config.environment.cpus == 1
    assert net.agent_timeout_s == 120 and net.verifier_timeout_s == 60
    assert load_task(TASKS / "multi-file").network("agent") == "no-network"  # the legacy allow_internet = false
    assert load_task(TASKS / "memory-limit").memory() == "256m"


def test_a_phase_network_overrides_the_environments(task_copy):
    folder = task_copy("network-off", ("[agent]\n", '[agent]\nnetwork_mode = "public"\n'))
    task = load_task(folder)
    assert (task.network("agent"), task.network("verifier")) == ("public", "no-network")


def test_what_cannot_run_here_is_refused_with_the_reason(task_copy):
    folder = task_copy("network-off", ('network_mode = "no-network"', 'network_mode = "allowlist"'))
    with pytest.raises(HarnessError, match="allowlist"):
        load_task(folder)
    folder = task_copy("multi-file")
    (folder / "environment" / "Dockerfile").unlink()
    with pytest.raises(HarnessError, match="no environment/Dockerfile"):
        load_task(folder)


def test_a_folder_without_tasks_says_what_a_task_folder_is(tmp_path):
    with pytest.raises(HarnessError, match="task.toml and instruction.md"):
        find_tasks([tmp_path])


def test_the_instruction_loses_its_canary_lines_as_in_harbor():
    assert load_task(TASKS / "network-off").instruction.startswith("List the network interfaces")
    assert strip_canary("# canary GUID 123\n\n\nDo it.\n") == "Do it.\n"
    assert strip_canary("Do it.\n# canary\n") == "Do it.\n# canary\n"


def test_base_image_rewrites_only_the_named_from_images():
    dockerfile = "FROM python:3.13 AS build\nRUN make\nFROM build\nFROM --platform=linux/amd64 ubuntu:24.04\n"
    rewritten, done = rewrite_from(dockerfile, {"python:3.13": "local:1", "build": "never"})
    assert done == [("python:3.13", "local:1")]
    assert rewritten.splitlines()[0] == "FROM local:1 AS build" and "FROM build" in rewritten
    assert from_images(rewritten) == ["local:1", "ubuntu:24.04"]
    assert parse_base_images(["a:1=b:2"]) == {"a:1": "b:2"}
    with pytest.raises(HarnessError, match="FROM=LOCAL"):
        parse_base_images(["a:1"])


def test_rewards_are_read_harbors_way():
    json_wins = read_reward('{"reward": 0.5, "part": 1}', "1")
    assert (json_wins.reward, json_wins.resolved, json_wins.rewards) == (0.5, False, {"reward": 0.5, "part": 1.0})
    assert read_reward(None, "1.0\n").resolved
    assert read_reward('{"accuracy": 1}', None).reward == 1.0  # one key: its value
    several = read_reward('{"a": 1, "b": 0}', None)
    assert several.reward is None and not several.resolved and several.error is None
    assert "no reward file" in (read_reward(None, None).error or "")
    assert "not finite" in (read_reward('{"reward": NaN}', None).error or "")
    assert "no number" in (read_reward(None, "passed").error or "")
