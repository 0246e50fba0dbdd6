"""`harness swe`: run a model on every instance of a suite, then grade the patches; `harness swe passk`: pass@k and
pass^k over several runs of each instance. `harness swe validate` and `harness swe-grade` grade without an agent
(cli/swe_grade.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import docker
import typer
from rich.console import Console
from rich.table import Table

from agent.models import check_model
from agent.models.pricing import load_prices
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
from cli.swe_grade import (
    BUILD_ENV,
    EXCLUDE_FLAKY,
    INFRA_RETRIES_OPTION,
    REPOS,
    RERUNS,
    SPECS,
    SUITE,
    TEST_ENV,
    TIMEOUT_OPTION,
    first_line,
    flaky_lines,
    graded_instances,
    infra_lines,
    load_suite,
    report_table,
    validate_command,
)
from core.errors import HarnessError
from evals.ab.passk import estimate, tallies
from evals.ab.records import load_batch
from evals.executors import Tally
from evals.swe.agents import is_reference
from evals.swe.batch import batch_run_id, check_batch, run_and_grade
from evals.swe.grader import InstanceReport, RunReport, outcome
from evals.swe.image import instance_image
from evals.swe.runner import InstanceResult, SweBatch, SweBatchSpec
from evals.swe.task import SweInstance


def instance_line(done: int, total: int, result: InstanceResult, report: InstanceReport) -> str:
    """One plain line per finished instance, e.g. `instance 2/6 done: acme__textkit-14 resolved, 12 steps, 3,456 tokens`."""
    return (
        f"instance {done}/{total} done: {result.instance_id} {outcome(report)}, {result.steps} steps, "
        f"{result.tokens:,} tokens"
    )


def _build_images(instances: Sequence[SweInstance], said: Console) -> None:
    """Build every task image up front, naming each, so the batch's bar measures agents, not builds.
    A failure is left for the instance's run to report as an environment error."""
    client = docker.from_env(timeout=300)
    with progress_bar(said) as progress:
        bar = progress.add_task("images", total=len(instances), note="")
        for inst in instances:
            progress.update(bar, note=f"building image of {inst.instance_id}")
            try:
                instance_image(inst, client, log=lambda s: progress.update(bar, note=first_line(s)))
            except HarnessError as e:
                said.print(text(("warning:", "yellow"), f" {str(e).splitlines()[0]}"))
            progress.update(bar, advance=1)


swe_app = typer.Typer(
    help="Run and grade SWE-bench instances; `harness swe validate` checks a dataset.",
    invoke_without_command=True,
    add_completion=False,
)


@swe_app.callback()
@exits_on_error
@stops_on_signal
def swe_command(
    ctx: typer.Context,
    suite: str = SUITE,
    specs: Path = SPECS,
    repos: Path = REPOS,
    build_env: list[str] = BUILD_ENV,
    model: str = typer.Option(None, help="A model string, or a reference agent: oracle, null, test-deleter."),
    policy: str = POLICY,
    workers: int = typer.Option(
        1,
        min=1,
        help="Instances run at once, each in its own container (with --executor ray and "
        "no --ray-address: the CPUs of the Ray instance started here).",
    ),
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: the new batch folder swe-<suite>-<model>-<time> is created "
        "inside it, and its path printed (not used with --resume).",
    ),
    resume: Path = typer.Option(
        None,
        help="Continue the batch in this folder (a batch folder an earlier `harness swe` "
        "printed): its finished instances are kept and the rest run.",
    ),
    only: list[str] = typer.Option(None, help="Run only these instance ids (repeatable)."),
    executor: str = EXECUTOR,
    ray_address: str = RAY_ADDRESS,
    task_cpus: float = TASK_CPUS,
    task_memory_mb: int = TASK_MEMORY_MB,
    retries: int = RETRIES,
    max_cost_usd: float = MAX_COST_USD,
    prices: Path = PRICES,
    infra_retries: int = INFRA_RETRIES_OPTION,
    timeout: int = TIMEOUT_OPTION,
    as_json: bool = typer.Option(
        False, "--json", help="Print the final report as JSON on stdout (progress lines go to stderr)."
    ),
    reruns: int = RERUNS,
    test_env: list[str] = TEST_ENV,
    exclude_flaky: Path = EXCLUDE_FLAKY,
    memory: str = MEMORY,
    memory_key: str = BATCH_MEMORY_KEY,
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Run a model on every instance of a suite in Docker sandboxes, then grade the patches with the hidden tests."""
    if ctx.invoked_subcommand is not None:
        return
    use_otel(otel_endpoint)
    if model is None:
        raise HarnessError("--model is required: a model string, or a reference agent (oracle, null, test-deleter).")
    if not is_reference(model):
        check_model(model)  # before anything is built or created
    if resume is not None and not resume.is_dir():
        raise HarnessError(
            f"--resume {resume}: no such batch folder. Name the folder an earlier `harness swe` printed."
        )
    instances = graded_instances(load_suite(suite, specs, repos, build_env), reruns, test_env, exclude_flaky)
    spec = SweBatchSpec(
        instances=_only(instances, only, suite),
        model=model,
        policy=policy_for(policy, model),
        batch_dir=resume or out / f"swe-{Path(suite).stem}-{batch_run_id(model)}-{stamp()}",
        executor=executor_options(executor, workers, ray_address, task_cpus, task_memory_mb, retries),
        max_cost_usd=max_cost_usd,
        prices=prices,
        infra_retries=infra_retries,
        test_timeout_s=timeout,
        memory=memory_dir(memory, memory_key),
    )
    check_batch(spec)  # a refusal before the batch folder is named: stdout stays empty
    report = _run_following(spec, stderr if as_json else console)  # the JSON alone on stdout
    _print_report(report, spec, as_json)


def _only(instances: list[SweInstance], only: list[str] | None, suite: str) -> list[SweInstance]:
    """The instances `--only` names, or all of them without it."""
    if not only:
        return instances
    unknown = sorted(set(only) - {i.instance_id for i in instances})
    if unknown:
        known = sorted(i.instance_id for i in instances)
        raise HarnessError(
            f"--only names no instance of {suite}: {', '.join(unknown)}. Its instances: {', '.join(known[:20])}"
            + (f" and {len(known) - 20} more." if len(known) > 20 else ".")
        )
    return [i for i in instances if i.instance_id in set(only)]


def _run_following(spec: SweBatchSpec[SweInstance], said: Console) -> RunReport:
    """Run and grade the batch under a progress bar, with a line per graded instance and a heartbeat."""
    said.print(text(f"batch folder: {spec.batch_dir}"), soft_wrap=True)
    if spec.executor.kind == "local":
        _build_images(spec.instances, said)
    total = len(spec.instances)
    counts = {"resolved": 0, "tokens": 0, "done": 0}
    started = time.monotonic()
    with progress_bar(said) as progress:
        bar = progress.add_task("instances", total=total, note="")

        def note(tally: Tally) -> str:
            return f"{tally.line()} · resolved {counts['resolved']} · {counts['tokens']:,} tokens"

        def changed(tally: Tally) -> None:
            progress.update(bar, completed=tally.ended, note=note(tally))

        tally = Tally(total=total, on_change=changed)

        def graded(result: InstanceResult, report: InstanceReport) -> None:
            counts["resolved"] += report.resolved
            counts["tokens"] += result.tokens
            counts["done"] += 1
            progress.update(bar, note=f"{note(tally)} · last {result.instance_id}")
            said.print(text(instance_line(counts["done"], total, result, report)))

        with heartbeat(said, lambda: f"instances: {note(tally)}, {time.monotonic() - started:.0f} s"):
            report = run_and_grade(spec, on_graded=graded, tally=tally)
        if not said.is_terminal:  # the bar's last state, which a pipe never sees
            said.print(text(f"instances: {note(tally)}"))
    return report


def _print_report(report: RunReport, spec: SweBatchSpec[SweInstance], as_json: bool) -> None:
    batch_dir = spec.batch_dir
    batch = SweBatch.model_validate_json((batch_dir / "batch.json").read_text())
    cost = batch.cost.line(batch_dir, "instance")
    if as_json:
        stderr.print(text(cost), soft_wrap=True)
        print_json({"batch_folder": str(batch_dir), **report.model_dump(mode="json"), "cost": batch.cost.model_dump()})
        return
    console.print(report_table(report, batch_dir))
    console.print(text(infra_lines(report)), soft_wrap=True)
    if flaky_lines(report):
        console.print(text(flaky_lines(report)), soft_wrap=True)
    console.print(text(cost), soft_wrap=True)
    console.print(
        text(
            f"predictions: {batch_dir / 'predictions.jsonl'}\nreport: {batch_dir / 'report.json'}\n"
            f"batch: {batch_dir / 'batch.json'}\n"
            f"logs: {batch_dir / 'logs' / batch_run_id(spec.model)}/<instance_id>/"
        ),
        soft_wrap=True,
    )


swe_app.command("validate")(validate_command)


@swe_app.command("passk")
@exits_on_error
def passk_command(
    batches: list[Path] = typer.Argument(
        ...,
        help="Batch folders of the same instances, or folders of such batch folders; together they give each "
        "instance its runs.",
    ),
    k: list[int] = typer.Option([1], "--k", min=1, help="The k of pass@k and pass^k (repeatable)."),
    level: float = typer.Option(0.95, min=0.5, max=0.999, help="Confidence level of the intervals."),
    resamples: int = typer.Option(10_000, min=100, help="Bootstrap resamples (over instances)."),
    seed: int = typer.Option(0, help="Seed of the bootstrap, so the intervals are reproducible."),
    as_json: bool = typer.Option(False, "--json", help="Print the estimates as JSON."),
) -> None:
    """pass@k (some of k runs resolve) and pass^k (all k do) per instance, averaged, with bootstrap intervals."""
    prices = load_prices(None)
    records = [r for batch in batches for r in load_batch(batch, prices)]
    runs = [n for n, _ in tallies(records).values()]
    found = [estimate(records, f"pass{kind}{kk}", level, resamples, seed) for kk in sorted(set(k)) for kind in "@^"]
    if as_json:
        print_json(
            {"instances": len(runs), "runs": len(records), "level": level, "estimates": [e.as_json() for e in found]}
        )
        return
    console.print(text(f"{len(runs)} instances, {min(runs)} to {max(runs)} runs each ({len(records)} runs)"))
    table = Table("metric", "instances", "estimate", f"{level:.0%} CI (bootstrap over instances)")
    for e in found:
        ci = f"{e.low:.1%} to {e.high:.1%}" if e.tasks > 1 else "n/a (one instance)" if e.tasks else "—"
        table.add_row(e.name, str(e.tasks), f"{e.value:.1%}" if e.tasks else "—", ci)
    console.print(table)
    for e in found:
        if e.left_out:
            console.print(text(f"{e.name} leaves out {len(e.left_out)} instances run fewer than {e.k} times"))
