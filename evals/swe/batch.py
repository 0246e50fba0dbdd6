"""A SWE batch end to end: run and grade every instance (one job each, locally or on Ray), write the reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path

import docker

from agent.journal.store import make_folder, write_json_atomic
from agent.memory_dir import MemoryDir
from core.errors import HarnessError
from core.policy import HarnessPolicy
from core.text_files import read_text_file
from evals.executors import Tally
from evals.swe.grader import TEST_TIMEOUT_S, InstanceReport, Prediction, RunReport, grade, run_report
from evals.swe.infra import INFRA_RETRIES, InfraFailure
from evals.swe.runner import (
    InstanceResult,
    SweBatchSpec,
    clear_incomplete,
    finished,
    refuse_to_start,
    run_batch,
    run_instance,
)
from evals.swe.task import SweInstance


def log_dir(out: Path, run_id: str, instance_id: str) -> Path:
    """The official layout: logs/<run_id>/<instance_id>/ (run_instance.log, test_output.txt, patch.diff, report.json)."""
    return out / "logs" / run_id / instance_id


def batch_run_id(model: str) -> str:
    """A batch's grading run is named after its model, so a batch's files do not depend on its folder's name."""
    return model.replace(":", "-").replace("/", "-")


def grade_result(
    inst: SweInstance,
    result: InstanceResult,
    client: docker.DockerClient | None,
    logs: Path | None = None,
    infra_retries: int = INFRA_RETRIES,
    timeout_s: int = TEST_TIMEOUT_S,
) -> InstanceReport:
    """The grade of a run; a run that failed (nothing to grade) is an error instance, an infra failure
    when its image did not build."""
    if result.error is not None:
        failure = result.infra_failure
        return InstanceReport(
            patch_is_None=True,
            patch_exists=False,
            patch_successfully_applied=False,
            resolved=False,
            error=result.error if failure is None else f"infra failure ({failure.cause}): {result.error}",
            infra_failure=failure,
            attempts=failure.attempts if failure else 1,
        )
    return grade(
        inst,
        result.model_patch,
        client,
        log=lambda s: None,
        log_dir=logs,
        infra_retries=infra_retries,
        timeout_s=timeout_s,
    )


def write_grade(run_dir: Path, instance_id: str, report: InstanceReport) -> None:
    write_json_atomic(run_dir / "grade.json", {instance_id: report.model_dump(mode="json")})


def run_and_grade_one(
    inst: SweInstance,
    model: str,
    policy: HarnessPolicy,
    prices: Path | None,
    out_dir: Path,
    run_id: str = "run",
    infra_retries: int = INFRA_RETRIES,
    timeout_s: int = TEST_TIMEOUT_S,
    memory: MemoryDir | None = None,
) -> InstanceResult:
    """A batch job: run one instance (again, up to `infra_retries` times, while its image does not build, its
    container does not start or no engine answers; the failed runs are kept as .<id>.incomplete-*), grade its patch in a fresh container, leave grade.json in its
    run directory and the grading files under logs/<run_id>/<instance_id>/ (a Ray job's folder carries both)."""
    for attempt in range(1, infra_retries + 2):
        result = _run(inst, model, policy, prices, out_dir, memory)
        if result.infra_failure is None:
            break
        result.infra_failure.attempts = attempt
        if attempt <= infra_retries:
            clear_incomplete(out_dir, inst.instance_id)
    logs = log_dir(out_dir, run_id, inst.instance_id)
    report = grade_result(inst, result, None, logs, infra_retries, timeout_s)
    if Path(result.run_dir).is_dir():  # not when no engine answered: the run never began
        write_grade(Path(result.run_dir), inst.instance_id, report)
    return result.model_copy(update={"grade": report})


def _run(
    inst: SweInstance,
    model: str,
    policy: HarnessPolicy,
    prices: Path | None,
    out_dir: Path,
    memory: MemoryDir | None,
) -> InstanceResult:
    try:
        client = docker.from_env(timeout=300)
    except docker.errors.DockerException as e:  # no engine: an infra failure, tried again like the others
        message = f"the Docker engine did not answer: {e}"
        return InstanceResult(
            instance_id=inst.instance_id,
            run_dir=str(out_dir / inst.instance_id),
            stop_reason="environment_error",
            model_patch=None,
            error=message,
            infra_failure=InfraFailure(cause="daemon", message=message),
        )
    with closing(client):
        return run_instance(inst, model, policy, out_dir, client, prices=prices, memory=memory)


def finished_and_graded(batch_dir: Path, instance_id: str) -> InstanceResult | None:
    """A finished run with its grade.json; a re-run of the batch skips it. A grade that was an infra
    failure is left off, so the run is kept and graded again."""
    result = finished(batch_dir, instance_id)
    path = batch_dir / instance_id / "grade.json"
    if result is None or not path.exists():
        return None
    report = InstanceReport.model_validate(json.loads(path.read_text())[instance_id])
    return result if report.infra_failure is not None else result.model_copy(update={"grade": report})


def check_batch(spec: SweBatchSpec[SweInstance]) -> None:
    """The batch's refusals (evals.swe.runner.refuse_to_start), made before a command says or builds anything."""
    refuse_to_start(spec, finished_and_graded)


def run_and_grade(
    spec: SweBatchSpec[SweInstance],
    on_graded: Callable[[InstanceResult, InstanceReport], None] = lambda r, g: None,
    tally: Tally | None = None,
) -> RunReport:
    """Run and grade every instance of the batch (local threads by default, or Ray), then write the reports."""
    instances, model = spec.instances, spec.model
    by_id = {i.instance_id: i for i in instances}
    reports: dict[str, InstanceReport] = {}

    def graded(result: InstanceResult) -> None:
        report = result.grade
        if report is None:  # the harness failed on it (nothing to grade), or its earlier grade was an infra failure
            logs = log_dir(spec.batch_dir, batch_run_id(model), result.instance_id)
            report = grade_result(
                by_id[result.instance_id], result, None, logs, spec.infra_retries, spec.test_timeout_s
            )
            if Path(result.run_dir).is_dir():
                write_grade(Path(result.run_dir), result.instance_id, report)
        reports[result.instance_id] = report
        on_graded(result, report)

    results = run_batch(
        spec,
        on_done=graded,
        work=partial(
            run_and_grade_one,
            run_id=batch_run_id(model),
            infra_retries=spec.infra_retries,
            timeout_s=spec.test_timeout_s,
        ),
        reuse=finished_and_graded,
        tally=tally,
    )
    predictions = {r.instance_id: Prediction(r.instance_id, model, r.model_patch) for r in results}
    report = run_report(list(instances), predictions, reports)
    write_json_atomic(spec.batch_dir / "report.json", report.model_dump(mode="json"))
    return report


def load_predictions(path: Path) -> dict[str, Prediction]:
    """Predictions as JSONL, a JSON list, or a JSON dict keyed by instance id (the forms the official harness reads)."""
    raw = read_text_file(path, "predictions file")
    stripped = raw.lstrip()
    try:
        if stripped.startswith("["):
            items = json.loads(raw)
        elif stripped.startswith("{") and "\n{" not in stripped.strip():
            data = json.loads(raw)
            items = list(data.values()) if "instance_id" not in data else [data]
        else:
            items = [json.loads(line) for line in raw.splitlines() if line.strip()]
    except json.JSONDecodeError as e:
        raise HarnessError(f"Predictions file {path} is not valid JSON or JSONL: {e}.") from None
    bad = next(
        (n for n, p in enumerate(items, 1) if not isinstance(p, dict) or not isinstance(p.get("instance_id"), str)),
        None,
    )
    if bad is not None or not items:
        said = f"its entry {bad} is not an object with an instance_id" if bad is not None else "it holds no prediction"
        raise HarnessError(
            f"Predictions file {path} cannot be graded: {said}. Each prediction is an object with instance_id, "
            "model_name_or_path and model_patch (JSONL, a JSON list, or a JSON object keyed by instance id)."
        )
    return {
        p["instance_id"]: Prediction(p["instance_id"], p.get("model_name_or_path", ""), p.get("model_patch"))
        for p in items
    }


def grade_file(
    instances: list[SweInstance],
    predictions: dict[str, Prediction],
    out: Path,
    run_id: str = "run",
    on_graded: Callable[[str, InstanceReport], None] = lambda i, g: None,
    on_step: Callable[[str], None] = lambda s: None,
    infra_retries: int = INFRA_RETRIES,
    timeout_s: int = TEST_TIMEOUT_S,
) -> RunReport:
    """Grade every predicted instance; each leaves its files under out/logs/<run_id>/<instance_id>/.
    Each grading connects to the engine afresh, so an engine that comes back mid-batch is used again."""
    make_folder(out, "grading folder", exist_ok=True)  # before any grading: a bad --out loses no work
    reports = {}
    for inst in instances:
        if inst.instance_id in predictions:
            reports[inst.instance_id] = grade(
                inst,
                predictions[inst.instance_id].model_patch,
                log=on_step,
                log_dir=log_dir(out, run_id, inst.instance_id),
                infra_retries=infra_retries,
                timeout_s=timeout_s,
            )
            on_graded(inst.instance_id, reports[inst.instance_id])
    report = run_report(instances, predictions, reports)
    write_json_atomic(out / "instance_reports.json", {k: v.model_dump(mode="json") for k, v in sorted(reports.items())})
    write_json_atomic(out / "report.json", report.model_dump(mode="json"))
    return report
