"""`harness resume`, `harness replay` and `harness approve`: picking a run up again, re-driving it, deciding on it."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agent.recorded.replay import replay
from agent.recovery.approval import pending_calls, record_decision
from agent.resume import resume
from agent.run.stopping import FAILED
from cli.otel_options import OTEL_ENDPOINT, use_otel
from cli.output import console, exits_on_error, stops_on_signal, text, warn
from cli.progress import following_run, summary_table
from core.errors import HarnessError


@exits_on_error
@stops_on_signal
def resume_command(
    run_dir: Path = typer.Argument(..., help="The run directory (runs/<run-id>) to continue."),
    model: str = typer.Option(None, help="Continue with this model string instead of the one in run.json."),
    repair: bool = typer.Option(
        False,
        "--repair",
        help=(
            "When a line in the middle of events.jsonl is damaged, cut the journal after its last good event "
            "(the cut part is kept as events.jsonl.damaged-N) and resume from there."
        ),
    ),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Continue a run that crashed (even under kill -9), was interrupted, or stopped awaiting approval.

    Loads the latest snapshot.json, rebuilds the state from events.jsonl (a line torn by a
    crash mid-write is reported and skipped; a damaged line in the middle, where an event is
    lost, stops the resume and names the line, unless --repair; without a usable snapshot
    the whole journal is folded),
    reconnects the sandbox (or recreates it from the task, and says so), finishes the step
    the crashed process began without asking the model again, and goes on with the same
    model: a scripted model continues after the replies already journaled. A write that was
    running when the process died is settled by its tool's own check, else by the policy's
    checkpoint.interrupted_writes (ask, rerun or unknown). Recorded approval decisions
    (`harness approve`) are applied. A finished run is left as it is. Exits 1 when the run
    stops on a model or sandbox failure, 2 on a usage error (such as a run still in use).
    """
    use_otel(otel_endpoint)
    with following_run(console) as state:
        done = resume(run_dir, model=model, listeners=(state,), repair=repair)
    for note in done.notes:
        console.print(text(("note:", "yellow"), f" {note}"), soft_wrap=True)
    if done.summary is None:
        return
    console.print(summary_table(done.summary))
    console.print(text(f"run directory: {run_dir}"), soft_wrap=True)
    say_how_to_approve(run_dir)
    if done.summary.stop_reason in FAILED:
        raise typer.Exit(1)


def say_how_to_approve(run_dir: Path) -> None:
    """After a run stops awaiting approval: the command that decides each waiting call."""
    for call_id in pending_calls(run_dir):
        console.print(
            text(f"waiting on call {call_id}: harness approve {run_dir} --call {call_id} --yes (or --no --note WHY)"),
            soft_wrap=True,
        )


@exits_on_error
@stops_on_signal
def replay_command(
    run_dir: Path = typer.Argument(..., help="The recorded run directory to replay."),
    out: Path = typer.Option(
        None, help="Parent folder: the replay's own run directory is created inside it (default: a temp folder)."
    ),
    execute: bool = typer.Option(
        False,
        "--execute",
        help=(
            "Run the tools again in a fresh sandbox and report where their output differs from the recording "
            "(the world changed); without it the recorded outputs are played back and nothing runs."
        ),
    ),
    otel_endpoint: str = OTEL_ENDPOINT,
) -> None:
    """Re-drive a recorded run with its recorded model replies and check the harness against it.

    By default no tool runs: each call gets the output recorded for it, and every prompt the
    harness renders (digest, size, message count), every write intent, observation, harness
    message and compaction, and the final stop must be byte-identical to the recording. Each
    difference is printed as a harness divergence with a diff; exits 1 if there is any.

    With --execute the tools run again in a sandbox prepared from the task's files and setup,
    with recorded approval decisions applied; tool outputs that differ from the recording once
    volatile text (times, durations, ids, the run folder) is normalised are reported as world
    changes, with a diff, and do not fail the replay. A recording whose journal ends in a torn line or has a
    damaged one is not replayed: the error names the line and what to do. Exits 2 on a usage error.
    """
    use_otel(otel_endpoint)
    report = replay(run_dir, out=out, execute=execute)
    for note in report.notes:
        warn(str(run_dir), note)
    for d in report.harness:
        where = f", call {d.call_id} ({d.tool})" if d.call_id else ""
        console.print(text(("harness divergence", "red"), f" at step {d.step}{where}: {d.what}"))
        if d.diff:
            console.print(text(d.diff), end="")
    for d in report.world:
        console.print(text(("world changed", "yellow"), f" at step {d.step}, call {d.call_id} ({d.tool}): {d.what}"))
        if d.diff:
            console.print(text(d.diff), end="")
    stops = f"stop: recorded {report.recorded_stop}, replayed {report.replayed_stop}"
    if report.executed:
        console.print(f"{report.observations} tool outputs compared, {len(report.world)} changed in the world; {stops}")
    else:
        console.print(
            f"{report.prompts} prompts and {report.observations} observations compared, "
            f"{len(report.harness)} harness divergences; {stops}"
        )
    console.print(text(f"replay directory: {report.replay_dir}"), soft_wrap=True)
    if report.harness:
        raise typer.Exit(1)


def parsed_answer(answer: str | None) -> dict | None:
    if answer is None:
        return None
    try:
        value = json.loads(answer)
    except json.JSONDecodeError as e:
        raise HarnessError(f"--answer is not valid JSON ({e}); give a JSON object of the form's fields.") from None
    if not isinstance(value, dict):
        raise HarnessError(f"--answer must be a JSON object of the form's fields, not {type(value).__name__}.")
    return value


@exits_on_error
def approve_command(
    run_dir: Path = typer.Argument(..., help="The run directory that stopped awaiting approval."),
    call: str = typer.Option(
        ..., "--call", help="The id of the waiting tool call (`harness resume` and the summary list them)."
    ),
    yes: bool = typer.Option(None, "--yes/--no", help="Approve the call (--yes) or refuse it (--no). One is required."),
    note: str = typer.Option("", help="A note for the model; with --no it is shown in the refusal the model sees."),
    answer: str = typer.Option(
        None,
        help="For a tool's question (an id CALL.inputN): the answer, a JSON object of the form's fields; fields "
        "left out take the form's defaults.",
    ),
) -> None:
    """Record a decision on a call that waits for approval; `harness resume RUN_DIR` then acts on it.

    A refused call becomes a `denied` observation that the model sees, with the note. For a
    write that was cut short by a crash (policy checkpoint.interrupted_writes = ask), --yes
    runs it again and --no tells the model its outcome is unknown. For a question an MCP
    server asked during a call (CALL.inputN), --yes --answer JSON answers it and --no declines
    it; the resumed run calls the tool again and gives the server that answer.
    """
    if yes is None:
        raise HarnessError("Say --yes to approve the call or --no to refuse it.")
    record_decision(run_dir, call, yes, note, parsed_answer(answer))
    left = pending_calls(run_dir)
    console.print(
        text(
            f"recorded: call {call} {'approved' if yes else 'refused'}."
            + (f" Still waiting on: {', '.join(left)}." if left else f" Continue with: harness resume {run_dir}")
        ),
        soft_wrap=True,
    )
