"""`harness swe` (run and grade a suite), `harness swe validate` (do a dataset's tests flip as declared?),
`harness swe passk` (pass@k and pass^k over several runs of each instance) and `harness swe-grade` (grade
any predictions file)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import docker
import typer
from rich.console import Console
from rich.table import Table

from agent.pricing import load_prices
from agent.session import policy_for
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
from cli.output import console, exits_on_error, print_json, stderr, text
from cli.progress import heartbeat, progress_bar
from core.errors import HarnessError
from evals.ab.passk import estimate, tallies
from evals.ab.records import load_batch
from evals.executors import Tally
from evals.swe.batch import batch_run_id, grade_file, load_predictions, run_and_grade
from evals.swe.evalscript import PINNED_ENV
from evals.swe.flaky import for_grading, write_flaky_list
from evals.swe.grader import TEST_TIMEOUT_S, InstanceReport, RunReport, outcome
from evals.swe.image import instance_image
from evals.swe.infra import INFRA_RETRIES
from evals.swe.runner import InstanceResult, SweBatch, SweBatchSpec
from evals.swe.suite import load_instances, parse_build_env, suite_path, unknown_predictions
from evals.swe.task import SweInstance
from evals.swe.validate import validate
from evals.tasks.report import TasksReport

SUITE = typer.Option(
    "builtin", help="A bundled suite name, or a JSON/JSONL file of SWE-bench records (classic or self-contained)."
)
SPECS = typer.Option(
    None,
    help="JSON/YAML environments of classic records: {repo: {version: {python, packages, pip_packages, "
    "pre_install, install, eval_commands, test_cmd, env, build_env, log_parser}}}.",
)
REPOS = typer.Option(
    None,
    help="Local repositories: DIR/<instance_id>/, DIR/<owner>__<repo>/ (a clone holding the base commit), "
    "or the same names with .bundle; used when no prebuilt instance image is in the local engine.",
)
BUILD_ENV = typer.Option(
    None,
    "--build-env",
    help="KEY=VALUE set while images are built (CA bundle, proxy, version "
    "pretends), never inside a container (repeatable).",
)
INFRA_RETRIES_OPTION = typer.Option(
    INFRA_RETRIES,
    "--infra-retries",
    min=0,
    help="Times an infra failure (image build, container start, eval timeout, no test ids in the log, "
    "Docker engine) is tried again; infra failures are reported apart and left out of the resolve rate.",
)
TIMEOUT_OPTION = typer.Option(
    TEST_TIMEOUT_S, "--timeout", min=1, help="Seconds the eval script may run; past it, an infra failure."
)


RERUNS = typer.Option(
    1,
    min=1,
    help="Run each instance's tests K times, each in a fresh container; a FAIL_TO_PASS or PASS_TO_PASS test "
    "whose status differs between runs is reported as flaky (the first run decides the official fields).",
)
TEST_ENV = typer.Option(
    None,
    "--test-env",
    help="KEY=VALUE exported at the top of every eval script, over the pinned defaults "
    f"({' '.join(f'{k}={v}' for k, v in PINNED_ENV.items())}); KEY= leaves KEY unpinned (repeatable).",
)
EXCLUDE_FLAKY = typer.Option(
    None,
    "--exclude-flaky",
    help="A flaky-test list (written by `harness swe validate --reruns K`): its tests are left out of "
    "FAIL_TO_PASS and PASS_TO_PASS when grading; the report names the file.",
)


def stamp() -> str:
    """The time part of a new folder's name, so each run of a command gets its own folder under --out."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def instance_line(done: int, total: int, result: InstanceResult, report: InstanceReport) -> str:
    """One plain line per finished instance, e.g. `instance 2/6 done: acme__textkit-14 resolved, 12 steps, 3,456 tokens`."""
    return (
        f"instance {done}/{total} done: {result.instance_id} {outcome(report)}, {result.steps} steps, "
        f"{result.tokens:,} tokens"
    )


def _load(suite: str, specs: Path | None, repos: Path | None, build_env: list[str] | None) -> list[SweInstance]:
    return load_instances(suite_path(suite), specs, repos, parse_build_env(build_env))


def _for_grading(
    instances: list[SweInstance], reruns: int, test_env: list[str] | None, exclude_flaky: Path | None
) -> list[SweInstance]:
    graded, warnings = for_grading(instances, reruns, parse_build_env(test_env, "--test-env"), exclude_flaky)
    for warning in warnings:
        console.print(text(("warning:", "yellow"), f" {warning}"), soft_wrap=True)
    return graded


def _flaky_lines(report: RunReport) -> str:
    """What the report says about flaky tests, below its table ('' when it says nothing)."""
    lines = [f"flaky tests left out of grading: {report.flaky_list}"] if report.flaky_list else []
    for iid, tests in report.flaky_tests.items():
        lines += [f"flaky in {iid}: {test}" for test in tests]
    return "\n".join(lines)


def _first_line(step: str) -> str:
    return (step.splitlines()[0] if step else "")[:100]


def _table(report: RunReport, where: Path) -> Table:
    table = Table(title=text(f"SWE report · {where}"), title_justify="left")
    columns = ("instances", "resolved", "unresolved", "empty patch", "not applied", "infra failure", "error")
    for col in (*columns, "resolved %"):
        table.add_column(col, justify="right")
    counts = (
        report.total_instances,
        report.resolved_instances,
        report.unresolved_instances - len(report.patch_not_applied_ids),
        report.empty_patch_instances,
        len(report.patch_not_applied_ids),
        report.infra_failure_instances,
        report.error_instances - report.infra_failure_instances,
    )
    table.add_row(*map(str, counts), f"{report.resolve_rate:.0%} of {report.resolve_rate_over}")
    return table


def infra_lines(report: RunReport | TasksReport) -> str:
    """The summary line, then one line per infra failure: its cause, attempts and first line."""
    lines = [report.summary()]
    for iid, failure in sorted(report.infra_failures.items()):
        first = failure.message.splitlines()[0] if failure.message else ""
        lines.append(f"  infra failure {iid}: {failure.cause} after {failure.attempts} attempts: {first[:200]}")
    return "\n".join(lines)


def _build_images(instances: Sequence[SweInstance], said: Console) -> None:
    """Build every task image up front, naming each, so the batch's bar measures agents, not builds.
    A failure is left for the instance's run to report as an environment error."""
    client = docker.from_env(timeout=300)
    with progress_bar(said) as progress:
        bar = progress.add_task("images", total=len(instances), note="")
        for inst in instances:
            progress.update(bar, note=f"building image of {inst.instance_id}")
            try:
                instance_image(inst, client, log=lambda s: progress.update(bar, note=_first_line(s)))
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
def swe_command(
    ctx: typer.Context,
    suite: str = SUITE,
    specs: Path = SPECS,
    repos: Path = REPOS,
    build_env: list[str] = BUILD_ENV,
    model: str = typer.Option(None, help="A model string, or a reference agent: oracle, null, test-deleter."),
    policy: str = typer.Option(
        None,
        help="A preset name (see `harness policies`) or a .toml/.yaml policy file; "
        "default: `local` for the embedded model, else `default`.",
    ),
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
) -> None:
    """Run a model on every instance of a suite in Docker sandboxes, then grade the patches with the hidden tests."""
    if ctx.invoked_subcommand is not None:
        return
    if model is None:
        raise HarnessError("--model is required: a model string, or a reference agent (oracle, null, test-deleter).")
    if resume is not None and not resume.is_dir():
        raise HarnessError(
            f"--resume {resume}: no such batch folder. Name the folder an earlier `harness swe` printed."
        )
    instances = _for_grading(_load(suite, specs, repos, build_env), reruns, test_env, exclude_flaky)
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
    console.print(_table(report, batch_dir))
    console.print(text(infra_lines(report)), soft_wrap=True)
    if _flaky_lines(report):
        console.print(text(_flaky_lines(report)), soft_wrap=True)
    console.print(text(cost), soft_wrap=True)
    console.print(
        text(
            f"predictions: {batch_dir / 'predictions.jsonl'}\nreport: {batch_dir / 'report.json'}\n"
            f"batch: {batch_dir / 'batch.json'}\n"
            f"logs: {batch_dir / 'logs' / batch_run_id(spec.model)}/<instance_id>/"
        ),
        soft_wrap=True,
    )


@swe_app.command("validate")
@exits_on_error
def validate_command(
    dataset: str = typer.Argument(..., help="A bundled suite name, or a JSON/JSONL file of SWE-bench records."),
    specs: Path = SPECS,
    repos: Path = REPOS,
    build_env: list[str] = BUILD_ENV,
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: a new folder swe-validate-<dataset>-<time> is created "
        "inside it for logs/validate/<instance_id>/{gold,empty}/ (and flaky.json with --reruns), and its path printed.",
    ),
    reruns: int = typer.Option(
        1,
        min=1,
        help="Run the gold patch K times; tests whose status differs are flaky, listed apart and written "
        "to <folder>/flaky.json for `--exclude-flaky`.",
    ),
    test_env: list[str] = TEST_ENV,
) -> None:
    """Grade the gold patch and the empty patch of every instance; list instances whose tests do not flip as declared."""
    instances = _for_grading(_load(dataset, specs, repos, build_env), reruns, test_env, None)
    out = out / f"swe-validate-{Path(dataset).stem}-{stamp()}"
    console.print(text(f"validation folder: {out}"), soft_wrap=True)
    with progress_bar(console) as progress:
        bar = progress.add_task("validating", total=len(instances), note="")

        def done(flip) -> None:
            progress.update(bar, advance=1)
            console.print(
                text(
                    f"instance {progress.tasks[0].completed:.0f}/{len(instances)} done: {flip.instance_id} "
                    f"{'flips as declared' if flip.as_declared else 'does not flip as declared'}"
                    + (f", {len(flip.flaky)} flaky tests" if flip.flaky else "")
                )
            )

        flips = validate(instances, out, on_done=done, progress=lambda s: progress.update(bar, note=_first_line(s)))
    wrong = [f for f in flips if not f.as_declared]
    for flip in wrong:
        console.print(text((flip.instance_id, "red"), f": {flip.error}" if flip.error else ""))
        for field in (
            "fail_to_pass_passing_before",
            "fail_to_pass_failing_after",
            "pass_to_pass_failing_before",
            "pass_to_pass_failing_after",
        ):
            for test in getattr(flip, field):
                console.print(text(f"  {field.replace('_', ' ')}: {test}"), soft_wrap=True)
    if reruns > 1:
        listed = out / "flaky.json"
        out.mkdir(parents=True, exist_ok=True)
        write_flaky_list(listed, reruns, {f.instance_id: f.flaky for f in flips})
        for flip in flips:
            for test in flip.flaky:
                console.print(text((flip.instance_id, "yellow"), f": flaky: {test}"), soft_wrap=True)
        console.print(
            text(
                f"{sum(len(f.flaky) for f in flips)} flaky tests in {sum(bool(f.flaky) for f in flips)} instances "
                f"over {reruns} gold runs: {listed} (grade with --exclude-flaky {listed})"
            ),
            soft_wrap=True,
        )
    console.print(
        text(f"{len(flips) - len(wrong)} of {len(flips)} instances flip as declared; logs: {out / 'logs' / 'validate'}")
    )
    if wrong:
        raise typer.Exit(1)


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
        ci = f"{e.low:.1%} to {e.high:.1%}" if e.tasks else "—"
        table.add_row(e.name, str(e.tasks), f"{e.value:.1%}" if e.tasks else "—", ci)
    console.print(table)
    for e in found:
        if e.left_out:
            console.print(text(f"{e.name} leaves out {len(e.left_out)} instances run fewer than {e.k} times"))


@exits_on_error
def swe_grade_command(
    predictions: Path = typer.Argument(
        ..., help="Predictions: JSONL (or JSON list/dict) with instance_id, model_name_or_path, model_patch."
    ),
    suite: str = SUITE,
    specs: Path = SPECS,
    repos: Path = REPOS,
    build_env: list[str] = BUILD_ENV,
    out: Path = typer.Option(
        Path("runs"),
        help="Parent folder: a new folder swe-grade-<run id>-<time> is created inside it "
        "for report.json, instance_reports.json and logs/<run_id>/, and its path printed.",
    ),
    run_id: str = typer.Option(None, help="Names the logs folder (default: the predictions file's name)."),
    reruns: int = RERUNS,
    test_env: list[str] = TEST_ENV,
    exclude_flaky: Path = EXCLUDE_FLAKY,
    infra_retries: int = INFRA_RETRIES_OPTION,
    timeout: int = TIMEOUT_OPTION,
) -> None:
    """Grade a predictions file against a suite's hidden tests, each in a fresh container."""
    try:
        instances = _load(suite, specs, repos, build_env)
        preds = load_predictions(predictions)
    except (OSError, ValueError, KeyError) as e:
        raise HarnessError(f"cannot read predictions {predictions}: {e}") from None
    instances = _for_grading(instances, reruns, test_env, exclude_flaky)
    for unknown in unknown_predictions(instances, list(preds)):
        console.print(
            text(("warning:", "yellow"), f" prediction {unknown} names no instance of the dataset; it is not graded.")
        )
    run_id = run_id or predictions.stem
    out = out / f"swe-grade-{run_id}-{stamp()}"
    console.print(text(f"grading folder: {out}"), soft_wrap=True)
    total = sum(i.instance_id in preds for i in instances)
    with progress_bar(console) as progress:
        bar = progress.add_task("grading", total=total, note="")

        def graded(iid: str, report: InstanceReport) -> None:
            progress.update(bar, advance=1)
            console.print(text(f"instance {progress.tasks[0].completed:.0f}/{total} graded: {iid} {outcome(report)}"))

        report = grade_file(
            instances,
            preds,
            out,
            run_id,
            on_graded=graded,
            on_step=lambda s: progress.update(bar, note=_first_line(s)),
            infra_retries=infra_retries,
            timeout_s=timeout,
        )
    console.print(_table(report, out))
    console.print(text(infra_lines(report)), soft_wrap=True)
    if _flaky_lines(report):
        console.print(text(_flaky_lines(report)), soft_wrap=True)
    console.print(text(f"report: {out / 'report.json'}\nlogs: {out / 'logs' / run_id}/<instance_id>/"), soft_wrap=True)
