"""One Harbor task, end to end: its image, the agent's run in it, then the verifier in the same container.

    image    environment/ built locally (evals/tasks/image.py), FROM images rewritten by --base-image
    agent    an ordinary run (agent.session.open_run) in the task's sandbox, told instruction.md;
             `oracle` runs solution/solve.sh, `null` submits at once, any other model string is the model
    verify   tests/ uploaded to /tests, test.sh run, the reward read (evals/tasks/verifier.py)

The run directory keeps the verdict twice: grade.json ({task id: verdict}, as a SWE run's) and summary.json's
outcome (`resolved`, `reward`, `rewards`), so reports and A/B tables read it like any graded run. The
verifier's output is the run's artifacts/test-stdout.txt. The task's agent timeout bounds the run's wall
time (and, for the oracle, its one shell call); its verifier timeout bounds test.sh.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import docker

from agent.journal.store import write_json_atomic
from agent.loop import run
from agent.memory_dir import MemoryDir
from agent.models.base import ModelClient
from agent.run.task import Task
from agent.session import RunSpec, SandboxFactory, SandboxSpec, open_run
from core.errors import HarnessError
from core.policy import HarnessPolicy
from evals.swe.infra import InfraFailure, daemon_failure, infra_cause
from evals.swe.runner import STARTING, InstanceResult, instance_memory, summarized
from evals.tasks.agents import SOLUTION_DIR, is_reference, reference_agent
from evals.tasks.image import task_image
from evals.tasks.network import enter_phase
from evals.tasks.sandbox import task_sandbox_options
from evals.tasks.task import HarborTask
from evals.tasks.upload import upload
from evals.tasks.verifier import Verdict, verify
from sandboxes.base import Sandbox
from sandboxes.docker import DockerSandbox

SYSTEM = (
    "You are an autonomous agent working in a Linux container, on the task the user describes. Act only "
    "through the tools: run commands, read and write files, check your work. Hidden tests will judge the "
    "result in this same container once you stop. When the task is done, call `submit` with a short summary."
)


def model_for(spec: str, task: HarborTask) -> str | ModelClient:
    """A reference agent, or the model string itself: the run loads that model, and closes it when it ends."""
    return reference_agent(spec, task) if is_reference(spec) else spec


def task_policy(policy: HarnessPolicy, task: HarborTask, model: str) -> HarnessPolicy:
    """The policy with the task's agent timeout as its wall-time limit (the lower one wins); the oracle's one
    shell call, which runs all of solve.sh, may take all of it."""
    limit = task.agent_timeout_s
    own = policy.stop.max_wall_s
    updates: dict = {"stop": policy.stop.model_copy(update={"max_wall_s": min(own, limit) if own else limit})}
    if model == "oracle":
        updates["dispatch"] = policy.dispatch.model_copy(update={"tool_timeout_s": limit})
    return policy.model_copy(update=updates)


def run_task(
    task: HarborTask,
    model_spec: str,
    policy: HarnessPolicy,
    batch_dir: Path,
    client: docker.DockerClient,
    rewrites: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda s: None,
    prices: Path | None = None,
    memory: MemoryDir | None = None,
) -> InstanceResult:
    sandbox: SandboxSpec | SandboxFactory
    infra = None
    try:
        image = task_image(task, client, rewrites, log)
        options = task_sandbox_options(task, image, client)
        sandbox = SandboxSpec(kind="docker", image=image, workdir=options["workdir"], options=options)
    except Exception as e:  # the environment failed, not the agent: the run records it, and the batch goes on
        sandbox = _unbuildable(e)
        infra = InfraFailure(cause=infra_cause(e, "build"), message=f"the task image could not be built: {e}")
    spec = RunSpec(
        Task(id=task.instance_id, prompt=task.instruction, system=SYSTEM),
        model_for(model_spec, task),
        task_policy(policy, task, model_spec),
        batch_dir,
        sandbox=sandbox,
        run_id=task.instance_id,
        prices=prices,
        memory=instance_memory(memory, task),
    )
    run_dir = batch_dir / task.instance_id
    workdir = (sandbox.workdir if isinstance(sandbox, SandboxSpec) else None) or "/"  # no sandbox: never used
    try:
        with open_run(spec) as session:
            box = cast(DockerSandbox, session.sandbox)  # a task's sandbox is always a Docker one
            enter_phase(task, box, "agent")
            if model_spec == "oracle":
                upload(session.sandbox, task.solution_dir, SOLUTION_DIR)
            summary = run(session)
            if summary.stop_reason == "sandbox_dead":
                verdict = Verdict(resolved=False, error="the sandbox died during the agent's run")
            else:
                verdict, output = _verified(task, box, workdir)
                session.journal.store_artifact("test-stdout.txt", output)
            session.journal.write_summary(
                summary.model_copy(update={"outcome": {**summary.outcome, **_outcome(verdict)}})
            )
    except HarnessError as e:
        if not (run_dir / "events.jsonl").exists():
            raise
        if infra is None and str(e).startswith(STARTING):  # the image built, its container did not start
            infra = InfraFailure(cause="daemon" if "no Docker engine answers" in str(e) else "start", message=str(e))
        verdict = Verdict(resolved=False, error=str(e), infra_failure=infra)
    write_grade(run_dir, task.instance_id, verdict)
    result = summarized(batch_dir, task.instance_id, None)
    if result is None:
        raise HarnessError(f"Task {task.instance_id}: its run left no summary.json in {run_dir}.")
    # A run its environment stopped (an image that did not build) failed, as a SWE run does; others have a verdict.
    if result.stop_reason != "environment_error":
        return result
    return result.model_copy(update={"error": verdict.error, "infra_failure": verdict.infra_failure})


def _verified(task: HarborTask, box: DockerSandbox, workdir: str) -> tuple[Verdict, str]:
    try:
        enter_phase(task, box, "verifier")
        return verify(task, box, workdir)
    except Exception as e:  # a dead container, a failed upload: the verifier's failure, recorded, not raised
        error = f"the verifier failed: {type(e).__name__}: {e}"
        infra = InfraFailure(cause="daemon", message=error) if daemon_failure(e) else None
        return Verdict(resolved=False, error=error, infra_failure=infra), ""


def _outcome(verdict: Verdict) -> dict:
    return {"resolved": verdict.resolved, "reward": verdict.reward, "rewards": verdict.rewards}


def _unbuildable(error: Exception) -> SandboxFactory:
    def start(workspace: Path) -> Sandbox:
        raise RuntimeError(f"the task image could not be built: {error}")

    return start


def write_grade(run_dir: Path, task_id: str, verdict: Verdict) -> None:
    write_json_atomic(run_dir / "grade.json", {task_id: verdict.model_dump(mode="json")})


def read_grade(run_dir: Path, task_id: str) -> Verdict | None:
    path = run_dir / "grade.json"
    if not path.is_file():
        return None
    return Verdict.model_validate(json.loads(path.read_text())[task_id])
