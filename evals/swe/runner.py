"""Run agents on SWE instances: one Docker sandbox per instance, then a predictions file.

    harness swe --suite builtin --model oracle --workers 2 [--executor ray]

Each instance gets an ordinary run directory (named after the instance, so a
re-run skips instances that already finished); the batch folder also gets
`predictions.jsonl` in the official format, `batch.json` (what the batch cost) and,
after grading, `report.json`.
Each instance is one job for an executor (evals/executors): threads here, or Ray tasks.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import docker
from pydantic import BaseModel

from agent.journal.store import make_folder, refuse_unmakeable, write_json_atomic
from agent.loop import run
from agent.memory_dir import MemoryDir, load
from agent.memory_store import MemorySource, refuse_own_instances
from agent.models.base import ModelClient
from agent.models.pricing import load_prices, price_for
from agent.models.spec import model_name
from agent.run.task import Task
from agent.session import RunSpec, SandboxFactory, SandboxSpec, open_run
from core.errors import HarnessError
from core.policy import HarnessPolicy
from evals.executors import BatchCost, Budget, Done, ExecutorOptions, Job, Tally, run_jobs
from evals.swe.agents import is_reference, reference_agent
from evals.swe.grader import TEST_TIMEOUT_S, InstanceReport
from evals.swe.image import BASELINE_REF, instance_image, sandbox_options
from evals.swe.infra import INFRA_RETRIES, InfraFailure, infra_cause
from evals.swe.task import SweInstance
from sandboxes.base import Sandbox

STARTING = "The sandbox could not be started"  # how agent.session says a sandbox's start failed

SYSTEM = (
    "You are a software engineer fixing an issue in the repository at /testbed, inside a sandboxed Linux "
    "machine without network access. Act only through the tools. Find the cause, change the source code to "
    "fix it, and check your change. Do not edit or delete tests: hidden tests will judge the fix. When the "
    "fix is done, call `submit` with a one-paragraph summary; your changes to /testbed are the answer."
)


def task_for(inst: SweInstance) -> Task:
    prompt = (
        f"<issue>\n{inst.problem_statement.strip()}\n</issue>\n\nThe repository {inst.repo} is checked out at /testbed."
    )
    if inst.hints_text.strip():
        prompt += f"\n\nHints:\n{inst.hints_text.strip()}"
    return Task(id=inst.instance_id, prompt=prompt, system=SYSTEM)


def final_diff(box: Sandbox, base_commit: str) -> str:
    """Every change since the environment's baseline (the base commit in images without one), new
    files included, as `git apply -p1` wants it: what the installation wrote is not the agent's."""
    base = f"$(git rev-parse -q --verify {BASELINE_REF} || echo {shlex.quote(base_commit)})"
    result = box.exec(f"git add -A && git diff --cached --binary {base}", timeout=120)
    if result.exit_code != 0:
        raise RuntimeError(f"collecting the patch failed: {result.output[-500:]}")
    return result.output


class BatchItem(Protocol):
    @property
    def instance_id(self) -> str: ...


Item = TypeVar("Item", bound=BatchItem)


@dataclass(frozen=True)
class SweBatchSpec(Generic[Item]):
    """Everything that decides a batch: the instances, the model (a model string or a reference agent), the
    policy, the batch folder (a batch run again into the same folder skips its finished instances), where
    the instances run, the price table each call is priced from (default: agent/models/prices.toml), the
    batch's budget: with `max_cost_usd`, no instance starts once the batch's runs (earlier ones in the
    folder included) cost that much, counting each run still going at the mean cost of the finished ones,
    how often an infra failure (evals/swe/infra.py) is tried again, and the eval script's timeout."""

    instances: Sequence[Item]  # SWE instances, or any item with an id (a Harbor task: evals/tasks)
    model: str
    policy: HarnessPolicy
    batch_dir: Path
    executor: ExecutorOptions = ExecutorOptions()
    max_cost_usd: float | None = None
    prices: Path | None = None
    infra_retries: int = INFRA_RETRIES
    test_timeout_s: int = TEST_TIMEOUT_S
    memory: MemoryDir | None = None  # the agent's memory kept across the batch's runs (its key per instance)

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and self.instances:  # refused before the batch folder exists
            name = self.model if is_reference(self.model) else model_name(self.model)
            price_for(name, self.prices, self.max_cost_usd, "--max-cost-usd")
        elif self.prices is not None:  # a table that cannot be read: refused here, not by each run that opens
            load_prices(self.prices)


class SweBatch(BaseModel):
    """batch.json of a SWE batch folder: what ran, and what it cost."""

    model: str
    policy: str
    cost: BatchCost


class InstanceResult(BaseModel):
    instance_id: str
    run_dir: str
    stop_reason: str
    model_patch: str | None
    error: str | None = None
    steps: int = 0
    tokens: int = 0
    cost_usd: float | None = None  # summary.json's: None when unknown
    unpriced_calls: int = 0
    grade: InstanceReport | None = None  # set by a graded batch (evals.swe.batch)
    infra_failure: InfraFailure | None = None  # the run failed for the machine's reason (build, start, daemon)


def model_for(spec: str, inst: SweInstance) -> str | ModelClient:
    """A reference agent, or the model string itself: the run loads that model, and closes it when it ends."""
    return reference_agent(spec, inst) if is_reference(spec) else spec


def run_instance(
    inst: SweInstance,
    model_spec: str,
    policy: HarnessPolicy,
    batch_dir: Path,
    client: docker.DockerClient,
    log: Callable[[str], None] = lambda s: None,
    prices: Path | None = None,
    memory: MemoryDir | None = None,
) -> InstanceResult:
    infra = None
    try:
        options = sandbox_options(instance_image(inst, client, log), client)
        sandbox: SandboxSpec | SandboxFactory = SandboxSpec(
            kind="docker", image=options.image, workdir=options.workdir, env={"PATH": options.env["PATH"]}
        )
    except Exception as e:  # the environment failed, not the agent: the run records it, and the batch goes on
        sandbox = _unbuildable(e)
        infra = InfraFailure(cause=infra_cause(e, "build"), message=f"the instance image could not be built: {e}")
    spec = RunSpec(
        task_for(inst),
        model_for(model_spec, inst),
        policy,
        batch_dir,
        sandbox=sandbox,
        toolset="repository",
        run_id=inst.instance_id,
        prices=prices,
        memory=instance_memory(memory, inst),
    )
    try:
        with open_run(spec) as session:
            summary = run(session)
            patch = final_diff(session.sandbox, inst.base_commit) if summary.stop_reason != "sandbox_dead" else None
            if patch is not None:
                session.journal.store_artifact("model.patch", patch)
    except HarnessError as e:
        if not (batch_dir / inst.instance_id / "events.jsonl").exists():
            raise
        if infra is None and str(e).startswith(STARTING):  # the image built, its container did not start
            infra = InfraFailure(cause="daemon" if "no Docker engine answers" in str(e) else "start", message=str(e))
        return InstanceResult(
            instance_id=inst.instance_id,
            run_dir=str(batch_dir / inst.instance_id),
            stop_reason="environment_error",
            model_patch=None,
            error=str(e),
            infra_failure=infra,
        )
    return InstanceResult(
        instance_id=inst.instance_id,
        run_dir=str(session.journal.dir),
        stop_reason=summary.stop_reason,
        model_patch=patch,
        steps=summary.steps,
        tokens=summary.tokens.prompt + summary.tokens.completion,
        cost_usd=summary.cost_usd,
        unpriced_calls=summary.unpriced_calls,
    )


def _unbuildable(error: Exception) -> SandboxFactory:
    def start(workspace: Path) -> Sandbox:
        raise RuntimeError(f"the instance image could not be built: {error}")

    return start


def finished(batch_dir: Path, instance_id: str) -> InstanceResult | None:
    """A run directory with a summary and a collected patch is complete; a re-run skips it."""
    patch = batch_dir / instance_id / "artifacts" / "model.patch"
    if not patch.exists():
        return None
    return summarized(batch_dir, instance_id, patch.read_text())


def summarized(batch_dir: Path, instance_id: str, patch: str | None) -> InstanceResult | None:
    """The result of a run directory that has its summary.json; None without one."""
    run_dir = batch_dir / instance_id
    summary = run_dir / "summary.json"
    if not summary.exists():
        return None
    s = json.loads(summary.read_text())
    return InstanceResult(
        instance_id=instance_id,
        run_dir=str(run_dir),
        stop_reason=s["stop_reason"],
        model_patch=patch,
        steps=s["steps"],
        tokens=s["tokens"]["prompt"] + s["tokens"]["completion"],
        cost_usd=s.get("cost_usd"),
        unpriced_calls=s.get("unpriced_calls", 0),
    )


def clear_incomplete(batch_dir: Path, instance_id: str) -> None:
    run_dir = batch_dir / instance_id
    if run_dir.exists():
        run_dir.rename(batch_dir / f".{instance_id}.incomplete-{datetime.now(UTC):%Y%m%d%H%M%S%f}")


def run_one(
    inst: SweInstance,
    model_spec: str,
    policy: HarnessPolicy,
    prices: Path | None,
    out_dir: Path,
    memory: MemoryDir | None = None,
) -> InstanceResult:
    """A batch job: one instance into `out_dir`, with a Docker client of its own, closed when it ends."""
    with closing(docker.from_env(timeout=300)) as client:
        return run_instance(inst, model_spec, policy, out_dir, client, prices=prices, memory=memory)


def instance_memory(kept: MemoryDir | None, instance: object) -> MemorySource | None:
    """A batch's memory for one of its runs: the kept store of the instance's key, which the run refuses when it
    holds entries written while working on that same instance (a benchmark's run must not read its own)."""
    return MemorySource(kept=kept.for_instance(instance), benchmark=True) if kept is not None else None


def refuse_contaminated(kept: MemoryDir, instances: Sequence[Any]) -> None:
    """Before a batch starts: a store that holds entries written while working on any instance it will run is
    refused, naming them (agent.memory_store.refuse_own_instances)."""
    by_key: dict[MemoryDir, list[str]] = {}
    for inst in instances:
        by_key.setdefault(kept.for_instance(inst), []).append(inst.instance_id)
    for store, ids in by_key.items():
        if store.folder.exists():
            refuse_own_instances(store, load(store), ids)


def refuse_foreign_folder(batch_dir: Path, instance_ids: Sequence[str]) -> None:
    """A folder the batch goes on in (--resume) must be one of its earlier runs: with its batch.json, or the
    run directory of one of its instances (a batch killed before it wrote batch.json), or empty. Any other
    folder would get the batch's run directories and files among its own."""
    if not batch_dir.is_dir() or (batch_dir / "batch.json").exists() or not any(batch_dir.iterdir()):
        return
    if any((batch_dir / i).exists() for i in instance_ids):
        return
    raise HarnessError(
        f"{batch_dir} is not a batch folder of these instances: it has no batch.json and no run directory of "
        "any of them, so nothing in it can be resumed. Name the folder an earlier run printed, or leave out "
        "--resume to start a new batch."
    )


def refuse_to_start(spec: SweBatchSpec[Any], reuse: Callable[[Path, str], InstanceResult | None] = finished) -> None:
    """The refusals of a batch that need nothing of it run: a --resume folder that is no earlier run of it, a batch
    folder that cannot be made, a kept memory holding entries written while working on an instance it would run (one
    `reuse` does not keep). A command makes them before it says or builds anything, so a refused batch leaves its
    output empty; run_batch makes them again, for a caller that did not."""
    refuse_foreign_folder(spec.batch_dir, [i.instance_id for i in spec.instances])
    refuse_unmakeable(spec.batch_dir, "batch folder")
    if spec.memory is not None:
        refuse_contaminated(spec.memory, [i for i in spec.instances if reuse(spec.batch_dir, i.instance_id) is None])


def run_batch(
    spec: SweBatchSpec[Any],
    on_done: Callable[[InstanceResult], None] = lambda r: None,
    work: Callable[..., InstanceResult] = run_one,  # (item, model, policy, prices, out dir, memory=...)
    reuse: Callable[[Path, str], InstanceResult | None] = finished,
    tally: Tally | None = None,
    predictions: bool = True,
) -> list[InstanceResult]:
    """Run `work` on every instance not already finished (per `reuse`) that the budget lets start, on the
    local executor or Ray; the instances it did not start have no result. `predictions`: write
    predictions.jsonl (a batch without patches, as Harbor tasks', has none to write)."""
    instances, batch_dir = spec.instances, spec.batch_dir
    refuse_to_start(spec, reuse)  # before a finished run is kept or an incomplete one moved aside
    if spec.memory is not None:
        work = partial(work, memory=spec.memory)
    tally = tally or Tally(total=len(instances))
    budget = Budget(spec.max_cost_usd, lambda r: (r.cost_usd, r.unpriced_calls))
    results: dict[str, InstanceResult] = {}
    todo = []
    for inst in instances:
        done = reuse(batch_dir, inst.instance_id)
        if done is not None:
            results[inst.instance_id] = done
            tally.reused(inst.instance_id)
            budget.count((done.cost_usd, done.unpriced_calls))
            on_done(done)
        else:
            clear_incomplete(batch_dir, inst.instance_id)
            todo.append(inst)

    def arrived(done: Done) -> None:
        run_dir = str(batch_dir / done.key)  # where the local executor wrote it, or where Ray's blob was unpacked
        if done.error is None:
            result = done.result.model_copy(update={"run_dir": run_dir})
        else:  # a harness failure on one instance must not lose the others
            result = InstanceResult(
                instance_id=done.key, run_dir=run_dir, stop_reason="harness_error", model_patch=None, error=done.error
            )
        results[done.key] = result
        on_done(result)

    make_folder(batch_dir, "batch folder", exist_ok=True)  # after the refusals: a refused batch leaves nothing
    jobs = [Job(inst.instance_id, work, (inst, spec.model, spec.policy, spec.prices), docker=True) for inst in todo]
    try:
        run_jobs(jobs, batch_dir, spec.executor, arrived, tally, budget)
    finally:  # an interrupted batch still says where its finished instances ran, and what they cost
        tally.write(batch_dir / "executor.json", [i.instance_id for i in instances])
        record = SweBatch(model=spec.model, policy=spec.policy.name, cost=budget.record())
        write_json_atomic(batch_dir / "batch.json", record.model_dump(mode="json"))
    ordered = [results[i.instance_id] for i in instances if i.instance_id in results]
    if predictions:
        write_predictions(batch_dir / "predictions.jsonl", ordered, spec.model)
    return ordered


def write_predictions(path: Path, results: list[InstanceResult], model_name: str) -> None:
    lines = [
        json.dumps({"instance_id": r.instance_id, "model_name_or_path": model_name, "model_patch": r.model_patch})
        for r in results
        if r.error is None
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(path)
