"""Each failure of the machine, injected: an image that does not build, a container that does not start,
an eval script that hangs past its timeout, a log with no test ids, a Docker engine that stops answering
mid-batch. Each is an infra failure with its cause, tried again (the attempts counted), and left out of
the resolve rate."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from cli.main import app
from core.policy import HarnessPolicy
from evals.swe.batch import grade_file, run_and_grade
from evals.swe.evalscript import END, START
from evals.swe.grader import Prediction
from evals.swe.image import instance_image
from evals.swe.runner import SweBatchSpec
from evals.swe.suite import SUITES, load_instances, suite_path
from sandboxes.image import build_derived

DEAD_DAEMON = "unix:///tmp/harness-test-no-daemon.sock"


@pytest.fixture(scope="module")
def instances():
    return load_instances(suite_path("builtin"))


def gold(instances):
    return {i.instance_id: Prediction(i.instance_id, "gold", i.patch) for i in instances}


def renamed(inst, name, **changes):
    return inst.model_copy(update={"instance_id": name, **changes})


def test_an_image_that_does_not_build_names_its_step(docker_ready, instances, tmp_path):
    spec = instances[0].spec.model_copy(update={"pre_install": ["echo harness-broken-step && exit 3"]})
    broken = renamed(instances[0], "acme__broken-1", spec=spec)
    report = grade_file([broken, instances[1]], gold([broken, instances[1]]), tmp_path)
    failure = report.infra_failures["acme__broken-1"]
    assert failure.cause == "build" and failure.attempts == 3
    assert "echo harness-broken-step && exit 3" in failure.message.splitlines()[0]  # the failing step
    assert "harness-broken-step" in failure.message.splitlines()[1:]  # and its last lines
    assert report.error_ids == ["acme__broken-1"] and report.infra_failure_ids == ["acme__broken-1"]
    assert report.resolved_ids == [instances[1].instance_id]
    assert (report.resolve_rate, report.resolve_rate_over) == (1.0, 1)
    log = (tmp_path / "logs" / "run" / "acme__broken-1" / "run_instance.log").read_text()
    assert log.count("infra failure (build) on attempt") == 2


def test_a_hanging_eval_script_and_a_log_without_test_ids(docker_ready, instances, tmp_path):
    hangs = renamed(instances[0], "acme__hangs-1", eval_script=f"echo '{START}'\nsleep 600\necho '{END}'\n")
    silent = renamed(instances[1], "acme__silent-1", eval_script=f"echo '{START}'\necho 'nothing ran'\necho '{END}'\n")
    batch = [hangs, silent, instances[2]]
    report = grade_file(batch, gold(batch), tmp_path, timeout_s=8)
    assert report.infra_failures["acme__hangs-1"].cause == "eval_timeout"
    assert report.infra_failures["acme__silent-1"].cause == "missing_test_ids"
    assert all(f.attempts == 3 for f in report.infra_failures.values())
    assert report.resolved_ids == [instances[2].instance_id]
    assert (report.resolve_rate, report.resolve_rate_over, report.total_instances) == (1.0, 1, 3)
    assert "infra failures left out (eval_timeout 1, missing_test_ids 1)" in report.summary()


def test_a_daemon_that_stops_answering_mid_batch(docker_ready, instances, tmp_path, monkeypatch):
    first, down, back = instances[:3]
    events = []

    def graded(iid, report):
        events.append(iid)
        if iid == first.instance_id:  # the engine goes away after the first instance ...
            monkeypatch.setenv("DOCKER_HOST", DEAD_DAEMON)

    def step(line):
        # ... stays away for every attempt of the second, and comes back after the third's first attempt
        if "infra failure (daemon) on attempt" in line and back.instance_id in line:
            monkeypatch.delenv("DOCKER_HOST")

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    report = grade_file([first, down, back], gold([first, down, back]), tmp_path, on_graded=graded, on_step=step)
    failure = report.infra_failures[down.instance_id]
    assert failure.cause == "daemon" and failure.attempts == 3
    assert report.infra_failure_ids == [down.instance_id]
    assert report.resolved_ids == sorted([first.instance_id, back.instance_id])
    assert (report.resolve_rate, report.resolve_rate_over) == (1.0, 2)
    reports = (tmp_path / "logs" / "run" / back.instance_id / "report.json").read_text()
    assert '"attempts": 2' in reports and '"infra_failure": null' in reports


def test_swe_grade_says_what_the_resolve_rate_covers(docker_ready, instances, tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SUITES / "builtin", suite)
    records = [json.loads(line) for line in (suite / "instances.jsonl").read_text().splitlines()][:2]
    records[0]["eval_script"] = f"echo '{START}'\necho 'nothing ran'\necho '{END}'\n"
    (suite / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({**r, "model_name_or_path": "gold", "model_patch": r["patch"]}) + "\n" for r in records)
    )
    args = ["swe-grade", str(preds), "--suite", str(suite / "instances.jsonl"), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, [*args, "--infra-retries", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{records[0]['instance_id']} infra failure (missing_test_ids)" in result.output  # the per-instance line
    assert "resolved 1 of 1 (100%); 1 infra failure left out (missing_test_ids 1)" in result.output
    assert f"infra failure {records[0]['instance_id']}: missing_test_ids after 2 attempts" in result.output


def test_a_resumed_batch_grades_an_infra_failure_again_without_running_it_again(docker_ready, instances, tmp_path):
    hangs = instances[0].model_copy(update={"eval_script": f"echo '{START}'\nsleep 600\necho '{END}'\n"})
    first = run_and_grade(SweBatchSpec([hangs], "oracle", HarnessPolicy(), tmp_path, infra_retries=0, test_timeout_s=5))
    assert first.infra_failures[hangs.instance_id].cause == "eval_timeout" and first.resolve_rate_over == 0
    journal = (tmp_path / hangs.instance_id / "events.jsonl").read_bytes()
    again = run_and_grade(SweBatchSpec([instances[0]], "oracle", HarnessPolicy(), tmp_path))  # the machine is fixed
    assert again.resolved_ids == [instances[0].instance_id] and again.infra_failure_ids == []
    assert (tmp_path / hangs.instance_id / "events.jsonl").read_bytes() == journal  # the run was kept
    assert not list(tmp_path.glob(".*.incomplete-*"))


def test_a_container_that_does_not_start_is_run_again_then_left_out(docker_ready, instances, tmp_path):
    # An instance image the sandbox cannot start in: it builds (its layers need only sh), but has no bash.
    task = instance_image(instances[0], docker_ready, log=lambda s: None)
    no_bash = build_derived(f"FROM {task}\nRUN rm /bin/bash\n", repo="harness-test", client=docker_ready)
    broken = renamed(instances[0], "acme__no-bash-1", image=no_bash)
    report = run_and_grade(SweBatchSpec([broken], "oracle", HarnessPolicy(), tmp_path, infra_retries=1))
    failure = report.infra_failures["acme__no-bash-1"]
    assert failure.cause == "start" and failure.attempts == 2 and "bash" in failure.message
    assert len(list(tmp_path.glob(".acme__no-bash-1.incomplete-*"))) == 1
    assert (report.error_ids, report.resolve_rate_over) == (["acme__no-bash-1"], 0)
