"""What the SWE commands share (the suite and grading options, the instances loaded for grading, the report's
table and lines; `harness tasks run` reads its report the same way), and the two commands that grade without
an agent: `harness swe-grade` (any predictions file) and `harness swe validate` (do a dataset's tests flip as
declared?)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from cli.destination import stamp
from cli.output import console, exits_on_error, text
from cli.progress import progress_bar
from evals.swe.batch import grade_file, load_predictions
from evals.swe.evalscript import PINNED_ENV
from evals.swe.flaky import for_grading, write_flaky_list
from evals.swe.grader import TEST_TIMEOUT_S, InstanceReport, RunReport, outcome
from evals.swe.infra import INFRA_RETRIES
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


def load_suite(suite: str, specs: Path | None, repos: Path | None, build_env: list[str] | None) -> list[SweInstance]:
    return load_instances(suite_path(suite), specs, repos, parse_build_env(build_env))


def graded_instances(
    instances: list[SweInstance], reruns: int, test_env: list[str] | None, exclude_flaky: Path | None
) -> list[SweInstance]:
    graded, warnings = for_grading(instances, reruns, parse_build_env(test_env, "--test-env"), exclude_flaky)
    for warning in warnings:
        console.print(text(("warning:", "yellow"), f" {warning}"), soft_wrap=True)
    return graded


def flaky_lines(report: RunReport) -> str:
    """What the report says about flaky tests, below its table ('' when it says nothing)."""
    lines = [f"flaky tests left out of grading: {report.flaky_list}"] if report.flaky_list else []
    for iid, tests in report.flaky_tests.items():
        lines += [f"flaky in {iid}: {test}" for test in tests]
    return "\n".join(lines)


def first_line(step: str) -> str:
    return (step.splitlines()[0] if step else "")[:100]


def report_table(report: RunReport, where: Path) -> Table:
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
    instances = graded_instances(load_suite(dataset, specs, repos, build_env), reruns, test_env, None)
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

        flips = validate(instances, out, on_done=done, progress=lambda s: progress.update(bar, note=first_line(s)))
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
    instances = load_suite(suite, specs, repos, build_env)
    preds = load_predictions(predictions)
    instances = graded_instances(instances, reruns, test_env, exclude_flaky)
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
            on_step=lambda s: progress.update(bar, note=first_line(s)),
            infra_retries=infra_retries,
            timeout_s=timeout,
        )
    console.print(report_table(report, out))
    console.print(text(infra_lines(report)), soft_wrap=True)
    if flaky_lines(report):
        console.print(text(flaky_lines(report)), soft_wrap=True)
    console.print(text(f"report: {out / 'report.json'}\nlogs: {out / 'logs' / run_id}/<instance_id>/"), soft_wrap=True)
