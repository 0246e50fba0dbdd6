"""`harness swe` (run and grade a suite) and `harness swe-grade` (grade any predictions file)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent.session import policy_for
from core.errors import HarnessError
from evals.executors import Tally
from evals.executors.options import EXECUTOR, RAY_ADDRESS, RETRIES, TASK_CPUS, TASK_MEMORY_MB, executor_options
from evals.swe.batch import grade_file, load_predictions, run_and_grade
from evals.swe.grader import RunReport
from evals.swe.task import load_instances, suite_path

console = Console()


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[note]}"),
                    TimeElapsedColumn(), console=console)


def _table(report: RunReport, where: Path) -> Table:
    table = Table(title=f"SWE report · {where}", title_justify="left")
    for col in ("instances", "resolved", "unresolved", "empty patch", "error", "resolved %"):
        table.add_column(col, justify="right")
    share = report.resolved_instances / report.total_instances if report.total_instances else 0.0
    table.add_row(*map(str, (report.total_instances, report.resolved_instances, report.unresolved_instances,
                             report.empty_patch_instances, report.error_instances)), f"{share:.0%}")
    return table


def swe_command(
    suite: str = typer.Option("builtin", help="A bundled suite name, or a JSONL file of SWE-bench instance records."),
    model: str = typer.Option(..., help="A model string, or a reference agent: oracle, null, test-deleter."),
    policy: str = typer.Option(None, help="A preset name (see `harness policies`) or a .toml/.yaml policy file; "
                               "default: `local` for the embedded model, else `default`."),
    workers: int = typer.Option(1, min=1, help="Instances run at once, each in its own container (with --executor ray and "
                                               "no --ray-address: the CPUs of the Ray instance started here)."),
    out: Path = typer.Option(None, help="Batch folder (default runs/swe-<suite>-<model>-<time>); re-running one skips finished instances."),
    only: list[str] = typer.Option(None, help="Run only these instance ids (repeatable)."),
    executor: str = EXECUTOR,
    ray_address: str = RAY_ADDRESS,
    task_cpus: float = TASK_CPUS,
    task_memory_mb: int = TASK_MEMORY_MB,
    retries: int = RETRIES,
) -> None:
    """Run a model on every instance of a suite in Docker sandboxes, then grade the patches with the hidden tests."""
    try:
        instances = load_instances(suite_path(suite))
        the_policy = policy_for(policy, model)
        options = executor_options(executor, workers, ray_address, task_cpus, task_memory_mb, retries)
    except HarnessError as e:
        console.print(f"[red]error:[/] {escape(str(e))}")
        raise typer.Exit(2)
    if only:
        instances = [i for i in instances if i.instance_id in set(only)]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    batch_dir = out or Path("runs") / f"swe-{Path(suite).stem}-{model.replace(':', '-').replace('/', '-')}-{stamp}"
    counts = {"resolved": 0, "tokens": 0}
    with _progress() as progress:
        bar = progress.add_task("instances", total=len(instances), note="")

        def note(tally: Tally) -> str:
            return f"{tally.line()} · resolved {counts['resolved']} · {counts['tokens']:,} tokens"

        def changed(tally: Tally) -> None:
            progress.update(bar, completed=tally.done + tally.failed, note=note(tally))

        tally = Tally(total=len(instances), on_change=changed)

        def graded(result, report):
            counts["resolved"] += report.resolved
            counts["tokens"] += result.tokens
            progress.update(bar, note=f"{note(tally)} · last {result.instance_id}")

        try:
            report = run_and_grade(instances, model, the_policy, batch_dir, workers, on_graded=graded, executor=options,
                                   tally=tally)
        except HarnessError as e:
            console.print(f"[red]error:[/] {escape(str(e))}")
            raise typer.Exit(2)
    console.print(_table(report, batch_dir))
    console.print(f"predictions: {batch_dir / 'predictions.jsonl'}\nreport: {batch_dir / 'report.json'}", soft_wrap=True)


def swe_grade_command(
    predictions: Path = typer.Argument(..., help="Predictions: JSONL (or JSON list/dict) with instance_id, model_name_or_path, model_patch."),
    suite: str = typer.Option("builtin", help="The suite the predictions answer: a bundled name or a JSONL file."),
    out: Path = typer.Option(Path("runs/swe-grade"), help="Folder for report.json and instance_reports.json."),
) -> None:
    """Grade a predictions file against a suite's hidden tests, each in a fresh container."""
    try:
        instances = load_instances(suite_path(suite))
        preds = load_predictions(predictions)
    except HarnessError as e:
        console.print(f"[red]error:[/] {escape(str(e))}")
        raise typer.Exit(2)
    except (OSError, ValueError, KeyError) as e:
        console.print(f"[red]error:[/] cannot read predictions {predictions}: {e}")
        raise typer.Exit(2)
    with _progress() as progress:
        bar = progress.add_task("grading", total=sum(i.instance_id in preds for i in instances), note="")
        report = grade_file(instances, preds, out, on_graded=lambda iid, r: progress.update(bar, advance=1, note=iid))
    console.print(_table(report, out))
