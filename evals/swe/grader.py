"""Grade predictions in fresh containers: apply the patch, run the eval script, parse, decide.

Resolved means every FAIL_TO_PASS and every PASS_TO_PASS test passes (a skipped
FAIL_TO_PASS test does not; a skipped PASS_TO_PASS test is no regression), as upstream
decides; `fail_only` records count a test as failed only when the log says FAILED.
Each graded instance leaves the official layout in its log folder: run_instance.log (every
step), patch.diff, eval.sh, test_output.txt, report.json, and junit.xml where pytest wrote one.
With reruns (evals/swe/flaky.py) the tests run again in fresh containers, logged under reruns/<n>/.
Reports mirror the official harness's fields and are deterministic: no times, sorted lists.
A failure of the machine's (evals/swe/infra.py) is retried and reported beside those fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
from pydantic import BaseModel, Field

from evals.swe.evalscript import APPLIED, APPLY_FAILED, JUNIT_PATH, TIMED_OUT, eval_script, marked_output
from evals.swe.flaky import report_fields
from evals.swe.image import instance_image, sandbox_options
from evals.swe.infra import INFRA_RETRIES, Cause, InfraFailure, infra_cause, resolve_line
from evals.swe.task import SweInstance
from evals.swe.testlog import lookup, maintained, passed, statuses
from sandboxes.docker import DockerSandbox

APPLY_STEPS = (
    "git apply -v {p}",
    "git apply -v --3way {p}",
    "patch --batch --forward --fuzz=5 -p1 -i {p}",
)
TEST_TIMEOUT_S = 1800
# The grader's container holds no agent: it runs as root, as the official harness does, so
# eval scripts may write where they need to; it still has no network.
GRADER_SANDBOX = {"user": "0:0", "read_only_root": False, "memory": "4g", "pids": 4096}


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
    # Beside the official fields (evals/swe/flaky.py): with --reruns K, the tests whose status differed
    # between the K runs (None: one run); with --exclude-flaky, the tests left out of grading.
    flaky_tests: list[str] | None = None
    excluded_flaky_tests: list[str] = Field(default_factory=list)
    infra_failure: InfraFailure | None = None  # when the failure is the machine's, its cause
    attempts: int = 1  # gradings tried: more than one after an infra failure


def outcome(report: InstanceReport) -> str:
    """resolved, unresolved, empty patch, patch did not apply, infra failure (its cause), or error."""
    if report.infra_failure is not None:
        return f"infra failure ({report.infra_failure.cause})"
    if report.error is not None:
        return "error"
    if not report.patch_exists:
        return "empty patch"
    if not report.patch_successfully_applied:
        return "patch did not apply"
    flaky = f" ({len(report.flaky_tests)} flaky tests)" if report.flaky_tests else ""
    return ("resolved" if report.resolved else "unresolved") + flaky


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model_name_or_path: str
    model_patch: str | None


class InstanceLog:
    """The per-instance log folder; without one, lines go only to `progress`."""

    def __init__(self, folder: Path | None, progress: Callable[[str], None]):
        self.folder, self.progress = folder, progress
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "run_instance.log").write_text("")

    def step(self, line: str) -> None:
        self.progress(line)
        self.write("run_instance.log", line + "\n", append=True)

    def write(self, name: str, text: str, append: bool = False) -> None:
        if self.folder is not None:
            with open(self.folder / name, "a" if append else "w", encoding="utf-8") as f:
                f.write(text)

    def rerun(self, number: int) -> InstanceLog:
        """The log of the tests' run number `number` (2 to K): reruns/<number>/ in this folder."""
        return InstanceLog(self.folder / "reruns" / str(number) if self.folder else None, self.progress)


def grade(
    inst: SweInstance,
    patch: str | None,
    client: docker.DockerClient | None = None,
    log: Callable[[str], None] = print,
    log_dir: Path | None = None,
    infra_retries: int = INFRA_RETRIES,
    timeout_s: int = TEST_TIMEOUT_S,
) -> InstanceReport:
    """Grade one patch; `log_dir` (e.g. logs/<run_id>/<instance_id>) receives the official files.
    An infra failure is graded again, up to `infra_retries` more times; without `client`, each
    attempt opens its own connection to the engine, so a restarted engine is picked up."""
    out = InstanceLog(log_dir, log)
    for attempt in range(1, infra_retries + 2):
        report = _attempt(inst, patch, client, out, timeout_s).model_copy(update={"attempts": attempt})
        failure = report.infra_failure
        if failure is None:
            break
        report.infra_failure = failure.model_copy(update={"attempts": attempt})
        if attempt <= infra_retries:
            out.step(
                f"{inst.instance_id}: infra failure ({failure.cause}) on attempt {attempt} of {infra_retries + 1}, "
                f"grading again: {failure.message.splitlines()[0] if failure.message else ''}"
            )
    out.step(f"{inst.instance_id}: " + ("error: " + report.error if report.error else f"resolved={report.resolved}"))
    out.write("report.json", json.dumps({inst.instance_id: report.model_dump(mode="json")}, indent=2) + "\n")
    return report


def _attempt(
    inst: SweInstance, patch: str | None, client: docker.DockerClient | None, out: InstanceLog, timeout_s: int
) -> InstanceReport:
    if client is not None:
        return _grade(inst, patch, client, out, timeout_s)
    try:
        own = docker.from_env(timeout=300)
    except docker.errors.DockerException as e:
        return _infra("daemon", f"the Docker engine did not answer: {e}")
    try:
        return _grade(inst, patch, own, out, timeout_s)
    finally:
        own.close()


def _grade(
    inst: SweInstance, patch: str | None, client: docker.DockerClient, out: InstanceLog, timeout_s: int
) -> InstanceReport:
    out.write("patch.diff", patch or "")
    if not patch or not patch.strip():
        out.step(f"{inst.instance_id}: empty patch, nothing to run")
        return InstanceReport(
            patch_is_None=patch is None, patch_exists=False, patch_successfully_applied=False, resolved=False
        )
    try:
        runs = [run_tests(inst, patch, client, out, timeout_s)]
        runs += [run_tests(inst, patch, client, out.rerun(n), timeout_s) for n in range(2, inst.reruns + 1)]
        return decide(inst, runs[0]).model_copy(update=report_fields(inst, runs))
    except NotApplied:
        return InstanceReport(patch_is_None=False, patch_exists=True, patch_successfully_applied=False, resolved=False)
    except InfraError as e:
        out.step(f"infra failure ({e.cause}): {e}")
        return _infra(e.cause, str(e), e.applied)
    except GradingError as e:
        return _error(str(e), e.applied)


class NotApplied(Exception):
    """The patch applies in none of the ways the official harness tries."""


class GradingError(Exception):
    """The grader failed in a way that is neither the patch's nor known to be the machine's: an error instance."""

    def __init__(self, message: str, applied: bool):
        super().__init__(message)
        self.applied = applied


class InfraError(GradingError):
    """Grading stopped for a reason of the machine's (evals/swe/infra.py names the causes)."""

    def __init__(self, cause: Cause, message: str, applied: bool = False):
        super().__init__(message, applied)
        self.cause = cause


def run_tests(
    inst: SweInstance, patch: str, client: docker.DockerClient, out: InstanceLog, timeout_s: int = TEST_TIMEOUT_S
) -> dict[str, str]:
    """Per-test statuses after `patch` (empty: none) in a fresh container of the instance's image."""
    try:
        out.step(f"building image of {inst.instance_id}")
        image = instance_image(inst, client, out.step)
    except Exception as e:  # an environment that cannot be built is an infra failure, not a crash
        raise InfraError(infra_cause(e, "build"), f"environment: {e}") from None
    try:
        box = DockerSandbox.start(sandbox_options(image, client, **GRADER_SANDBOX), client=client)
    except Exception as e:
        raise InfraError(infra_cause(e, "start"), f"the container did not start: {e}") from None
    try:
        if patch.strip():
            out.step(f"applying the patch of {inst.instance_id}")
            if not _apply(box, patch, out):
                out.step(APPLY_FAILED)
                raise NotApplied
            out.step(APPLIED)
        script = eval_script(inst)
        out.write("eval.sh", script)
        box.write_file("/tmp/eval.sh", script.encode())
        out.step(f"running the tests of {inst.instance_id}")
        result = box.exec("bash /tmp/eval.sh > /tmp/test_output.txt 2>&1; echo $?", timeout=timeout_s)
        whole = box.read_file("/tmp/test_output.txt").decode("utf-8", "replace")
        out.write("test_output.txt", whole)
        if result.timed_out:
            out.step(TIMED_OUT)
            raise InfraError("eval_timeout", f"the tests ran past {timeout_s} s", applied=True)
        out.step(f"eval script exit status {result.output.strip()}")
        junit = _junit(box)
        if junit is not None:
            out.write("junit.xml", junit)
        sliced = marked_output(whole)
        if sliced is None:
            raise InfraError(
                "missing_test_ids",
                "the tests did not run: the log lacks the test output markers or the test patch did not "
                "apply (see test_output.txt)",
                applied=True,
            )
        found = statuses(inst, sliced, whole, junit)
        if not found and (inst.FAIL_TO_PASS or inst.PASS_TO_PASS):
            raise InfraError("missing_test_ids", "the log names no test at all (see test_output.txt)", applied=True)
        return found
    except (NotApplied, GradingError):
        raise
    except Exception as e:
        if infra_cause(e, "start") == "daemon":
            raise InfraError("daemon", f"the engine or the container failed: {type(e).__name__}: {e}", True) from None
        raise GradingError(f"grader: {type(e).__name__}: {e}", applied=True) from None
    finally:
        box.close()


def _apply(box: DockerSandbox, patch: str, out: InstanceLog) -> bool:
    box.write_file("/tmp/model.patch", patch.encode())
    for step in APPLY_STEPS:
        result = box.exec(step.format(p="/tmp/model.patch"), timeout=120)
        out.step(f"$ {step.format(p='patch.diff')} (exit {result.exit_code})\n{result.output.rstrip()}")
        if result.exit_code == 0:
            return True
        box.exec("git checkout -q -- . && git clean -fdq", timeout=60)  # undo a partial attempt
    return False


def _junit(box: DockerSandbox) -> str | None:
    if box.exec(f"test -s {JUNIT_PATH}", timeout=30).exit_code != 0:
        return None
    return box.read_file(JUNIT_PATH).decode("utf-8", "replace")


def decide(inst: SweInstance, found: dict[str, str]) -> InstanceReport:
    status = lookup(found)
    f2p_ok, p2p_ok = (not_failed, not_failed) if inst.eval_type == "fail_only" else (passed, maintained)
    ts = TestsStatus()
    for test in inst.FAIL_TO_PASS:
        (ts.FAIL_TO_PASS.success if f2p_ok(status(test)) else ts.FAIL_TO_PASS.failure).append(test)
    for test in inst.PASS_TO_PASS:
        (ts.PASS_TO_PASS.success if p2p_ok(status(test)) else ts.PASS_TO_PASS.failure).append(test)
    resolved = not ts.FAIL_TO_PASS.failure and not ts.PASS_TO_PASS.failure
    return InstanceReport(
        patch_is_None=False, patch_exists=True, patch_successfully_applied=True, resolved=resolved, tests_status=ts
    )


def not_failed(status: str | None) -> bool:
    """`fail_only` records: only a test the log calls FAILED fails (upstream's check_fail_only)."""
    return status != "FAILED"


def _error(message: str, applied: bool = False) -> InstanceReport:
    return InstanceReport(
        patch_is_None=False, patch_exists=True, patch_successfully_applied=applied, resolved=False, error=message
    )


def _infra(cause: Cause, message: str, applied: bool = False) -> InstanceReport:
    failure = InfraFailure(cause=cause, message=message)
    return _error(f"infra failure ({cause}): {message}", applied).model_copy(update={"infra_failure": failure})


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
    # Beside the official fields: flaky tests per instance (--reruns), and the list grading left out.
    flaky_tests: dict[str, list[str]] = Field(default_factory=dict)
    flaky_list: str | None = None
    schema_version: int = 2
    # Beside the official fields: the machine's failures (also in error_ids) apart, and a resolve
    # rate that leaves them out and says how many instances it covers.
    infra_failure_instances: int = 0
    infra_failure_ids: list[str] = Field(default_factory=list)
    infra_failures: dict[str, InfraFailure] = Field(default_factory=dict)
    patch_not_applied_ids: list[str] = Field(default_factory=list)  # also in unresolved_ids
    resolve_rate: float = 0.0
    resolve_rate_over: int = 0

    def summary(self) -> str:
        return resolve_line(self.resolved_instances, self.resolve_rate_over, self.infra_failures)


def run_report(
    instances: list[SweInstance], predictions: dict[str, Prediction], reports: dict[str, InstanceReport]
) -> RunReport:
    ids = sorted(i.instance_id for i in instances)
    submitted = sorted(i for i in ids if i in predictions)
    errors = sorted(i for i in submitted if reports[i].error is not None)
    empty = sorted(i for i in submitted if not reports[i].patch_exists and i not in errors)
    completed = sorted(i for i in submitted if i not in empty and i not in errors)
    resolved = sorted(i for i in completed if reports[i].resolved)
    unresolved = sorted(i for i in completed if not reports[i].resolved)
    infra = {i: f for i in errors if (f := reports[i].infra_failure) is not None}
    over = len(ids) - len(infra)
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
        flaky_tests={i: reports[i].flaky_tests or [] for i in completed if reports[i].flaky_tests},
        flaky_list=next((i.flaky_list for i in instances if i.flaky_list), None),
        infra_failure_instances=len(infra),
        infra_failure_ids=sorted(infra),
        infra_failures=infra,
        patch_not_applied_ids=[i for i in unresolved if not reports[i].patch_successfully_applied],
        resolve_rate=round(len(resolved) / over, 6) if over else 0.0,
        resolve_rate_over=over,
    )
