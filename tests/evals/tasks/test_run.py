"""Harbor tasks run for real: images built here, the agent's container with the task's network and limits,
test.sh's reward read back, a batch folder that reports, A/B and resume read like a SWE batch's."""

import json

import pytest

from agent.journal.store import read_run_info
from agent.session import recorded_sandbox
from core.errors import HarnessError
from core.policy import HarnessPolicy
from evals.executors import Tally
from evals.swe.runner import SweBatchSpec
from evals.tasks.batch import run_tasks
from evals.tasks.task import find_tasks
from tests.evals.tasks.conftest import REWRITES, TASKS

pytestmark = pytest.mark.timeout(600)


def batch(tasks, model, folder, tally=None, rewrites=REWRITES):
    spec = SweBatchSpec(instances=tasks, model=model, policy=HarnessPolicy(), batch_dir=folder)
    return run_tasks(spec, rewrites, tally=tally)


def grade(folder, task_id):
    return json.loads((folder / task_id / "grade.json").read_text())[task_id]


def test_the_oracle_resolves_every_task_and_the_half_one_reports_its_half(docker_ready, tmp_path):
    folder = tmp_path / "oracle"
    report = batch(find_tasks([TASKS]), "oracle", folder)
    assert report.resolved_ids == ["memory-limit", "multi-file", "network-off"]
    assert report.unresolved_ids == ["half-reward"] and report.error_ids == []
    assert report.rewards == {"half-reward": 0.5, "memory-limit": 1.0, "multi-file": 1.0, "network-off": 1.0}
    assert report.mean_reward == 0.875
    assert json.loads((folder / "report.json").read_text())["resolved_ids"] == report.resolved_ids
    half = json.loads((folder / "half-reward" / "summary.json").read_text())["outcome"]
    assert (half["resolved"], half["reward"], half["rewards"]["part_one"]) == (False, 0.5, 1.0)
    assert not (folder / "predictions.jsonl").exists()  # no patches in a tasks batch
    run = json.loads((folder / "memory-limit" / "run.json").read_text())
    assert run["sandbox_options"]["memory"] == "256m" and run["sandbox_options"]["network"] == "none"
    recorded = recorded_sandbox(read_run_info(folder / "memory-limit"), "resume")  # what a resume reopens
    assert recorded.options == run["sandbox_options"] and recorded.image == run["image"]

    tally = Tally(total=4)
    again = batch(find_tasks([TASKS]), "oracle", folder, tally)  # a resumed batch keeps its finished tasks
    assert again == report and {i["status"] for i in tally.items.values()} == {"reused"}


def test_the_null_agent_resolves_none(docker_ready, tmp_path):
    report = batch(find_tasks([TASKS]), "null", tmp_path / "null")
    assert report.resolved_ids == [] and report.error_ids == []
    assert set(report.rewards.values()) == {0.0}


def test_a_model_string_runs_the_agent_loop_with_the_instruction(docker_ready, tmp_path):
    """Any other model than the reference agents is an ordinary run (a scripted model here): told the
    instruction, acting with the standard tools in the task's working directory, judged by test.sh."""
    script = tmp_path / "agent.yaml"
    script.write_text(
        "replies:\n"
        '  - tool_calls: [{name: write_file, arguments: {path: one.txt, content: "hello\\n"}}]\n'
        '  - tool_calls: [{name: shell, arguments: {command: "echo 104743 > /app/two.txt"}}]\n'
        "  - tool_calls: [{name: submit, arguments: {answer: both parts}}]\n"
    )
    folder = tmp_path / "scripted"
    report = batch(find_tasks([TASKS / "half-reward"]), f"scripted:{script}", folder)
    assert report.resolved_ids == ["half-reward"] and report.rewards == {"half-reward": 1.0}
    run = json.loads((folder / "half-reward" / "run.json").read_text())
    assert run["task"]["prompt"].startswith("Two parts, each worth half the reward")
    assert run["workdir"] == "/app"


def test_the_tasks_limits_are_what_make_their_tests_pass(docker_ready, task_copy, tmp_path):
    """The same solutions with the network on, or twice the memory, fail the same tests: the tests see the
    limits task.toml sets, not the sandbox's defaults."""
    public = task_copy("network-off", ('network_mode = "no-network"', 'network_mode = "public"'))
    roomy = task_copy("memory-limit", ("memory_mb = 256", "memory_mb = 1024"))
    report = batch(find_tasks([public.parent]), "oracle", tmp_path / "loosened")
    assert report.rewards == {"memory-limit": 0.0, "network-off": 0.0}
    out = (tmp_path / "loosened" / "network-off" / "artifacts" / "test-stdout.txt").read_text()
    assert "interfaces besides lo" in out
    assert roomy.name in report.unresolved_ids


def test_the_verifier_gets_its_own_network_and_the_agent_keeps_none(docker_ready, task_copy, tmp_path):
    folder = task_copy("network-off", ("[verifier]\n", '[verifier]\nnetwork_mode = "public"\n'))
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\n"  # the agent saw only the loopback; the verifier sees the bridge too
        '[ "$(cat /app/interfaces.txt)" = lo ] && ls /sys/class/net | grep -vqx lo && r=1 || r=0\n'
        "echo $r > /logs/verifier/reward.txt\n"
    )
    report = batch(find_tasks([folder]), "oracle", tmp_path / "phases")
    assert report.resolved_ids == ["network-off"]


def test_an_unpullable_from_image_is_an_error_naming_base_image(docker_ready, tmp_path):
    folder = tmp_path / "unpulled"
    report = batch(find_tasks([TASKS / "multi-file"]), "oracle", folder, rewrites={})
    assert report.error_ids == ["multi-file"]
    error = grade(folder, "multi-file")["error"]
    assert "python:3.13-slim-bookworm" in error and "--base-image" in error


def test_an_image_that_does_not_build_is_an_infra_failure_tried_again_and_out_of_the_resolve_rate(
    docker_ready, task_copy, tmp_path
):
    broken = task_copy("multi-file")
    with (broken / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'the mirror is down' >&2 && exit 3\n")
    task_copy("network-off")  # beside it in the dataset folder, and resolved
    spec = SweBatchSpec(
        instances=find_tasks([broken.parent]),
        model="oracle",
        policy=HarnessPolicy(),
        batch_dir=tmp_path / "b",
        infra_retries=1,
    )
    report = run_tasks(spec, REWRITES)
    assert report.resolved_ids == ["network-off"] and report.error_ids == ["multi-file"]  # official: an error
    assert report.infra_failure_ids == ["multi-file"]
    failure = report.infra_failures["multi-file"]
    assert failure.cause == "build" and failure.attempts == 2
    assert "RUN echo 'the mirror is down'" in failure.message and "the mirror is down" in failure.message
    assert (report.resolve_rate, report.resolve_rate_over) == (1.0, 1)
    assert report.summary() == "resolved 1 of 1 (100%); 1 infra failure left out (build 1)"
    assert list((tmp_path / "b").glob(".multi-file.incomplete-*"))  # the first attempt, kept


def test_a_verifier_past_its_timeout_is_an_error(docker_ready, task_copy, tmp_path):
    folder = task_copy("multi-file", ("timeout_sec = 60", "timeout_sec = 2"))
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n")
    report = batch(find_tasks([folder]), "oracle", tmp_path / "slow")
    assert report.error_ids == ["multi-file"]
    assert "timeout" in grade(tmp_path / "slow", "multi-file")["error"]


def test_the_oracle_without_a_solution_is_refused_before_the_batch_starts(task_copy, tmp_path):
    folder = task_copy("multi-file")
    (folder / "solution" / "solve.sh").unlink()
    with pytest.raises(HarnessError, match="multi-file has none"):
        batch(find_tasks([folder]), "oracle", tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_a_batch_with_a_cost_budget_needs_a_priced_model(tmp_path):
    with pytest.raises(HarnessError, match="no price"):
        SweBatchSpec(
            instances=find_tasks([TASKS]), model="oracle", policy=HarnessPolicy(), batch_dir=tmp_path, max_cost_usd=1
        )
