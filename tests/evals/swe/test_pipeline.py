"""The bundled suite through the real pipeline: Docker sandboxes, the loop, the grader."""

from __future__ import annotations

import json

import pytest

from core.policy import HarnessPolicy
from evals.executors import ExecutorOptions
from evals.swe.batch import grade_file, load_predictions, run_and_grade
from evals.swe.grader import grade
from evals.swe.runner import SweBatchSpec
from evals.swe.suite import load_instances, suite_path

RUN_FILES = {"run.json", "events.jsonl", "summary.json", "grade.json", "artifacts"}
GRADE_FILES = {"run_instance.log", "patch.diff", "report.json"}


@pytest.fixture(scope="module")
def instances():
    return load_instances(suite_path("builtin"))


@pytest.mark.parametrize("agent, resolved", [("oracle", True), ("null", False), ("test-deleter", False)])
def test_reference_agents(docker_ready, instances, tmp_path, agent, resolved):
    report = run_and_grade(SweBatchSpec(instances, agent, HarnessPolicy(), tmp_path, ExecutorOptions(workers=2)))
    ids = sorted(i.instance_id for i in instances)
    assert report.total_instances == len(ids) and report.error_ids == []
    if agent == "oracle":
        assert report.resolved_ids == ids
    elif agent == "null":
        assert report.resolved_ids == [] and report.empty_patch_ids == ids
        assert all((tmp_path / iid / "artifacts" / "model.patch").read_text() == "" for iid in ids)
    else:  # the suite goes green only by deleting tests; the test reset and PASS_TO_PASS catch it
        assert report.resolved_ids == [] and report.unresolved_ids == ids
    for iid in ids:
        assert RUN_FILES <= {p.name for p in (tmp_path / iid).iterdir()}
        assert GRADE_FILES <= {p.name for p in (tmp_path / "logs" / agent / iid).iterdir()}
        assert json.loads((tmp_path / iid / "summary.json").read_text())["stop_reason"] == "submitted"
    predictions = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert sorted(p["instance_id"] for p in predictions) == ids
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in predictions)


def test_grading_twice_gives_identical_reports(docker_ready, instances, tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"instance_id": i.instance_id, "model_name_or_path": "gold", "model_patch": i.patch}) + "\n"
            for i in instances[:2]
        )
    )
    first = grade_file(instances, load_predictions(preds), tmp_path / "a")
    grade_file(instances, load_predictions(preds), tmp_path / "b")
    assert first.resolved_instances == 2 and len(first.incomplete_ids) == len(instances) - 2
    for name in ("report.json", "instance_reports.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_patch_that_does_not_apply_is_reported_not_raised(docker_ready, instances):
    bad = "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n"
    report = grade(instances[0], bad, docker_ready, log=lambda s: None)
    assert (
        report.patch_exists and not report.patch_successfully_applied and not report.resolved and report.error is None
    )


def test_an_environment_that_fails_to_build_is_an_infra_failure_run_again(docker_ready, instances, tmp_path):
    spec = instances[0].spec.model_copy(update={"pre_install": ["apt-get install -y no-such-package-harness-test"]})
    broken = instances[0].model_copy(update={"instance_id": "acme__broken-1", "spec": spec})
    report = run_and_grade(SweBatchSpec([broken, instances[1]], "oracle", HarnessPolicy(), tmp_path, infra_retries=1))
    assert report.error_ids == ["acme__broken-1"] and report.resolved_ids == [instances[1].instance_id]
    summary = tmp_path / "acme__broken-1" / "events.jsonl"
    assert "environment_error" in summary.read_text()
    # An infra failure: run again once (the first run kept aside), reported apart, out of the resolve rate.
    failure = report.infra_failures["acme__broken-1"]
    assert failure.cause == "build" and failure.attempts == 2 and "no-such-package-harness-test" in failure.message
    assert len(list(tmp_path.glob(".acme__broken-1.incomplete-*"))) == 1
    assert (report.resolve_rate, report.resolve_rate_over) == (1.0, 1)
