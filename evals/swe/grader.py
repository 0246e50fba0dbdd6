"""Grade predictions in fresh containers: apply the patch, reset and apply the hidden tests, run, decide.

Resolved means every FAIL_TO_PASS and every PASS_TO_PASS test passes: the first
list proves the bug is fixed, the second that nothing else broke (and it is what
catches an agent that made the suite green by deleting tests).
Reports mirror the official harness's fields and are deterministic: no times,
sorted lists.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

import docker
from pydantic import BaseModel, Field

from evals.swe.image import instance_image
from evals.swe.task import SweInstance
from evals.swe.testlog import parse_pytest, passed
from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import DockerOptions

APPLY_STEPS = (
    "git apply -v {p}",
    "git apply -v --3way {p}",
    "patch --batch --forward --fuzz=5 -p1 -i {p}",
)
TEST_TIMEOUT_S = 600


class Outcome(BaseModel):
    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


class TestsStatus(BaseModel):
    FAIL_TO_PASS: Outcome = Outcome()
    PASS_TO_PASS: Outcome = Outcome()
    FAIL_TO_FAIL: Outcome = Outcome()
    PASS_TO_FAIL: Outcome = Outcome()


class InstanceReport(BaseModel):
    patch_is_None: bool
    patch_exists: bool
    patch_successfully_applied: bool
    resolved: bool
    tests_status: TestsStatus = TestsStatus()
    error: str | None = None  # the environment or the grader failed; not the model's fault


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model_name_or_path: str
    model_patch: str | None


def grade(inst: SweInstance, patch: str | None, client: docker.DockerClient, log: Callable[[str], None] = print) -> InstanceReport:
    if not patch or not patch.strip():
        return InstanceReport(patch_is_None=patch is None, patch_exists=False, patch_successfully_applied=False, resolved=False)
    try:
        image = instance_image(inst, client, log)
        box = DockerSandbox.start(DockerOptions(image=image, workdir="/testbed"), client=client)
    except Exception as e:  # an environment that cannot start is an error instance, not a crash
        return _error(f"environment: {e}")
    try:
        if not _apply(box, patch):
            return InstanceReport(patch_is_None=False, patch_exists=True, patch_successfully_applied=False, resolved=False)
        _reset_tests(box, inst)
        result = box.exec(f"{inst.environment.test_command} {' '.join(map(shlex.quote, inst.test_files()))} 2>&1", timeout=TEST_TIMEOUT_S)
        if result.timed_out:
            return _error(f"the tests ran past {TEST_TIMEOUT_S} s", applied=True)
        return decide(inst, parse_pytest(result.output))
    except Exception as e:
        return _error(f"grader: {type(e).__name__}: {e}", applied=True)
    finally:
        box.close()


def _apply(box: DockerSandbox, patch: str) -> bool:
    box.write_file("/tmp/model.patch", patch.encode())
    for step in APPLY_STEPS:
        if box.exec(step.format(p="/tmp/model.patch"), timeout=120).exit_code == 0:
            return True
        box.exec("git checkout -q -- . && git clean -fdq", timeout=60)  # undo a partial attempt
    return False


def _reset_tests(box: DockerSandbox, inst: SweInstance) -> None:
    """Put every file the test patch touches back to the base commit, then apply the test patch."""
    box.write_file("/tmp/test.patch", inst.test_patch.encode())
    files = box.exec("git apply --numstat /tmp/test.patch | cut -f3", timeout=60).output.split()
    for f in files:
        q = shlex.quote(f)
        box.exec(f"git checkout -q {shlex.quote(inst.base_commit)} -- {q} 2>/dev/null || rm -f {q}", timeout=60)
    result = box.exec("git apply -v /tmp/test.patch", timeout=60)
    if result.exit_code != 0:
        raise RuntimeError(f"the test patch does not apply: {result.output[-500:]}")


def decide(inst: SweInstance, status: dict[str, str]) -> InstanceReport:
    ts = TestsStatus()
    for test in inst.FAIL_TO_PASS:
        (ts.FAIL_TO_PASS.success if passed(status.get(test)) else ts.FAIL_TO_PASS.failure).append(test)
    for test in inst.PASS_TO_PASS:
        (ts.PASS_TO_PASS.success if passed(status.get(test)) else ts.PASS_TO_PASS.failure).append(test)
    resolved = not ts.FAIL_TO_PASS.failure and not ts.PASS_TO_PASS.failure
    return InstanceReport(patch_is_None=False, patch_exists=True, patch_successfully_applied=True, resolved=resolved, tests_status=ts)


def _error(message: str, applied: bool = False) -> InstanceReport:
    return InstanceReport(patch_is_None=False, patch_exists=True, patch_successfully_applied=applied, resolved=False, error=message)


class RunReport(BaseModel):
    total_instances: int
    submitted_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    empty_patch_instances: int
    error_instances: int
    completed_ids: list[str]
    incomplete_ids: list[str]
    submitted_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    empty_patch_ids: list[str]
    error_ids: list[str]
    schema_version: int = 2


def run_report(instances: list[SweInstance], predictions: dict[str, Prediction], reports: dict[str, InstanceReport]) -> RunReport:
    ids = sorted(i.instance_id for i in instances)
    submitted = sorted(i for i in ids if i in predictions)
    errors = sorted(i for i in submitted if reports[i].error is not None)
    empty = sorted(i for i in submitted if not reports[i].patch_exists and i not in errors)
    completed = sorted(i for i in submitted if i not in empty and i not in errors)
    resolved = sorted(i for i in completed if reports[i].resolved)
    unresolved = sorted(i for i in completed if not reports[i].resolved)
    return RunReport(
        total_instances=len(ids),
        submitted_instances=len(submitted),
        completed_instances=len(completed),
        resolved_instances=len(resolved),
        unresolved_instances=len(unresolved),
        empty_patch_instances=len(empty),
        error_instances=len(errors),
        completed_ids=completed,
        incomplete_ids=sorted(set(ids) - set(submitted)),
        submitted_ids=submitted,
        resolved_ids=resolved,
        unresolved_ids=unresolved,
        empty_patch_ids=empty,
        error_ids=errors,
    )
