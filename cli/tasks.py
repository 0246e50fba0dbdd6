"""`harness tasks run DIR...`: Harbor-format tasks (Terminal-Bench 2.0 and the like) run and verified here."""

from __future__ import annotations

import time
from pathlib import Path

import docker
import typer
from rich.console import Console
from rich.table import Table

from agent.models import check_model
from agent.session import policy_for
from cli.destination import stamp
from cli.executor_options import (
    EXECUTOR,
    MAX_COST_USD,
    PRICES,
    RAY_ADDRESS,
    RETRIES,
    TASK_CPUS,
    TASK_MEMORY_MB,
    executor_options,
)
from cli.memory_options import BATCH_MEMORY_KEY, MEMORY, memory_dir
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, print_json, stderr, stops_on_signal, text
from cli.policy_options import POLICY
from cli.progress import heartbeat, progress_bar
from cli.swe_grade import INFRA_RETRIES_OPTION, infra_lines
from core.errors import HarnessError
from evals.executors import Tally
from evals.swe.batch import batch_run_id
from evals.swe.runner import InstanceResult, SweBatch, SweBatchSpec
from evals.tasks.agents import is_reference
from evals.tasks.batch import check_batch, run_tasks
from evals.tasks.image import parse_base_images, task_image
from evals.tasks.report import TasksReport
from evals.tasks.task import HarborTask, find_tasks
from evals.tasks.verifier import Verdict

tasks_app = typer.Typer(help="Run Harbor-format tasks (Terminal-Bench 2.0 and the like).", add_completion=False)


@tasks_app.command("run")
@exits_on_error
@stops_on_signal
def run_command(
    dirs: list[Path] = typer.Argument(
        ..., help="Task folders (task.toml, instruction.md...) or dataset folders of them."
    ),
    model: str = typer.Option(..., help="A model string, or a reference agent: oracle (solution/solve.sh), null."),
    policy: str = POLICY,
    base_image: list[str] = typer.Option(
        None,
        "--base-image",
        help="FROM=LOCAL: build a Dockerfile's FROM image (one that cannot be pulled here) on a local image "
        "instead, e.g. python:3.13-slim-bookworm=harness-base:bookworm-1 (repeatable).",
    ),
    workers: int = typer.Option(1, min=1, help="Tasks run at once, each in its own container."),
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: the new batch folder tasks-<model>-<time> is created inside it, and its path "
        "printed (not used with --resume).",
    ),
    resume: Path = typer.Option(
        None, help="Continue the batch in this folder: its finished tasks are kept and the rest run."
    ),
    only: list[str] = typer.Option(None, help="Run only these tasks (folder names; repeatable)."),
    executor: str = EXECUTOR,
    ray_address: str = RAY_ADDRESS,
    task_cpus: float = TASK_CPUS,
    task_memory_mb: int = TASK_MEMORY_MB,
    retries: int = RETRIES,
    infra_retries: int = INFRA_RETRIES_OPTION,
    max_cost_usd: float = MAX_COST_USD,
    prices: Path = PRICES,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout (progress to stderr)."),
    memory: str = MEMORY,
    memory_key: str = BATCH_MEMORY_KEY,
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Build each task's environment, run the agent on its instruction in that container with the task's
    network and limits, then run its tests/test.sh and read the reward; a task is resolved at reward 1.0."""
    use_otel(otel_endpoint)
    if resume is not None and not resume.is_dir():
        raise HarnessError(f"--resume {resume}: no such batch folder. Name the folder an earlier run printed.")
    if not is_reference(model):
        check_model(model)  # before anything is built or created
    rewrites = parse_base_images(base_image)
    spec = SweBatchSpec(
        instances=_only(find_tasks(dirs), only),
        model=model,
        policy=policy_for(policy, model),
        batch_dir=resume or out / f"tasks-{batch_run_id(model)}-{stamp()}",
        executor=executor_options(executor, workers, ray_address, task_cpus, task_memory_mb, retries),
        max_cost_usd=max_cost_usd,
        prices=prices,
        infra_retries=infra_retries,
        memory=memory_dir(memory, memory_key),
    )
    check_batch(spec)  # a refusal before the batch folder is named: stdout stays empty
    said = stderr if as_json else console
    report = _run_following(spec, rewrites, said)
    batch = SweBatch.model_validate_json((spec.batch_dir / "batch.json").read_text())
    cost = batch.cost.line(spec.batch_dir, "task")
    if as_json:
        stderr.print(text(cost), soft_wrap=True)
        print_json(
            {"batch_folder": str(spec.batch_dir), **report.model_dump(mode="json"), "cost": batch.cost.model_dump()}
        )
        return
    console.print(_table(report, spec.batch_dir))
    console.print(text(infra_lines(report)), soft_wrap=True)
    console.print(text(cost), soft_wrap=True)
    console.print(text(f"report: {spec.batch_dir / 'report.json'}"), soft_wrap=True)


def _only(tasks: list[HarborTask], only: list[str] | None) -> list[HarborTask]:
    if not only:
        return tasks
    unknown = sorted(set(only) - {t.instance_id for t in tasks})
    if unknown:
        raise HarnessError(
            f"--only names no task given: {', '.join(unknown)}. The tasks: {', '.join(t.instance_id for t in tasks)}."
        )
    return [t for t in tasks if t.instance_id in set(only)]


def _build_images(tasks: list[HarborTask], rewrites: dict[str, str], said: Console) -> None:
    """Build every task image up front, saying which FROM images were rewritten, so the bar measures agents.
    A failure is left for the task's run to record as an environment error."""
    client = docker.from_env(timeout=300)
    for task in tasks:
        try:
            task_image(task, client, rewrites, log=lambda s: said.print(text(s)) if "--base-image" in s else None)
        except HarnessError as e:
            said.print(text(("warning:", "yellow"), f" {str(e).splitlines()[0]}"))


def verdict_word(verdict: Verdict) -> str:
    if verdict.error is not None:
        return f"error ({verdict.error.splitlines()[0][:300]})"
    return "resolved" if verdict.resolved else f"unresolved (reward {verdict.reward})"


def _run_following(spec: SweBatchSpec[HarborTask], rewrites: dict[str, str], said: Console) -> TasksReport:
    said.print(text(f"batch folder: {spec.batch_dir}"), soft_wrap=True)
    if spec.executor.kind == "local":
        _build_images(list(spec.instances), rewrites, said)
    total = len(spec.instances)
    counts = {"resolved": 0, "done": 0}
    started = time.monotonic()
    with progress_bar(said) as progress:
        bar = progress.add_task("tasks", total=total, note="")
        tally = Tally(total=total, on_change=lambda t: progress.update(bar, completed=t.ended, note=t.line()))

        def verified(result: InstanceResult, verdict: Verdict) -> None:
            counts["resolved"] += verdict.resolved
            counts["done"] += 1
            said.print(
                text(
                    f"task {counts['done']}/{total} done: {result.instance_id} {verdict_word(verdict)}, "
                    f"{result.steps} steps, {result.tokens:,} tokens"
                )
            )

        with heartbeat(said, lambda: f"tasks: {tally.line()}, {time.monotonic() - started:.0f} s"):
            report = run_tasks(spec, rewrites, on_verdict=verified, tally=tally)
    return report


def _table(report: TasksReport, where: Path) -> Table:
    table = Table(title=text(f"Tasks report · {where}"), title_justify="left")
    for col in ("tasks", "resolved", "unresolved", "infra failure", "error", "resolved %", "mean reward"):
        table.add_column(col, justify="right")
    mean = "" if report.mean_reward is None else f"{report.mean_reward:.3f}"
    table.add_row(
        str(report.total_instances),
        str(report.resolved_instances),
        str(report.unresolved_instances),
        str(report.infra_failure_instances),
        str(report.error_instances - report.infra_failure_instances),
        "" if report.resolve_rate is None else f"{report.resolve_rate:.0%}",
        mean,
    )
    return table
