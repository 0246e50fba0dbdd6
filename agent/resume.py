"""Continue a run from its directory: after a crash (even kill -9), an approval stop, or an interrupt.

Load the latest snapshot, rebuild the state from the journal (agent.recovery.restore),
reconnect the sandbox (or recreate it, and say so), make the same model continue
where it was (a scripted model skips the replies already journaled), and go on
with the loop, which first finishes any step the dead process began. A fork that has not
branched yet (its process died building the branch, or `harness fork` hands it over) builds its
branch first (agent.branch).
"""

from __future__ import annotations

import shutil
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.branch import branch
from agent.journal.fold import fold, worked_s
from agent.journal.integrity import skipped_note
from agent.journal.snapshot import Snapshot, load_snapshot
from agent.journal.store import Journal, RunInfo, damage_error, read_run_info, scan, write_json_atomic
from agent.journal.summary import Summary, summarize
from agent.loop import run
from agent.models import client_for
from agent.models.base import ModelClient
from agent.models.scripted import ScriptedModel
from agent.recovery.branch import branched
from agent.recovery.reconcile import reapply_writes
from agent.recovery.restore import Restored, restore
from agent.reopen import Reopening, reopen_run
from agent.run.stopping import RESUMABLE, StopRule
from agent.run.task import Task
from agent.session import SandboxFactory, open_sandbox, prepare, recorded_sandbox
from agent.telemetry import live_spans
from core.errors import HarnessError
from core.events import ApprovalGiven, Event, ResourceUpdated, RunResumed, RunStopped, SandboxOpened
from core.interrupts import signals_handled
from core.policy import HarnessPolicy
from memory.summariser import Summariser
from sandboxes.base import Sandbox
from tools.base import Registry, Tool, ToolContext
from tools.code_mode.tool import NAME as RUN_CODE


@dataclass
class Resumed:
    summary: Summary | None  # None when there was nothing to resume
    notes: list[str] = field(
        default_factory=list
    )  # what a person should know: damaged lines, fallbacks, reconciled calls


def resume(
    run_dir: Path,
    model: str | ModelClient | None = None,
    tools: Registry | None = None,
    sandbox: SandboxFactory | None = None,
    listeners: Sequence[Callable[[Event], None]] = (),
    stop_rules: Sequence[StopRule] = (),
    repair: bool = False,
    first_branch: bool = False,
    summariser: Summariser | None = None,
    clock: Callable[[], float] = time.time,
    updates: deque[ResourceUpdated] | None = None,
    programs: Tool | None = None,
    placed: str | None = None,
) -> Resumed:
    """Continue the run in `run_dir` until it stops again. `model` defaults to the one in run.json.
    `repair`: a journal damaged in the middle is cut after its last good event instead of refused.
    `first_branch`: the fork `harness fork` just made, whose branch is built for the first time (a resume that
    finds a fork not branched builds the branch again, and journals so).
    `summariser`: who compaction asks (default: the run's model), as agent.loop.run takes it; `clock`: what dates
    memory entries (a replay's gives the recorded times); `updates`: a replay's recorded resource updates, given
    instead of the servers' (Session.updates); `programs`: a replay's run_code for a fork's branch, `placed`: its placed
    resources' text for a run that begins again (Reopening)."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    journal = Journal(run_dir)  # first of all: it refuses while another process is writing this run
    journal.listeners.extend(listeners)
    spans = live_spans(info)  # the resumed part's spans, where an OTLP endpoint is set
    if spans is not None:
        journal.listeners.append(spans)
    abandon = info.policy.get("checkpoint", {}).get("on_signal", "abandon") == "abandon"
    how = Reopening(tools, sandbox, stop_rules, summariser, clock, updates, programs, placed)
    try:
        with signals_handled(abandon):
            cut = journal.repair() if repair else None
            notes = [cut] if cut else []
            return _resume(run_dir, info, journal, model, how, notes, first_branch)
    finally:
        journal.close()
        if spans is not None:
            spans.close()


def _resume(
    run_dir: Path,
    info: RunInfo,
    journal: Journal,
    model: str | ModelClient | None,
    how: Reopening,
    notes: list[str],
    first_branch: bool,
) -> Resumed:
    found = scan(run_dir)
    if found.damage is not None:
        raise damage_error(run_dir, found)
    events = found.events
    notes += [skipped_note(bad) for bad in found.skipped]
    ended = finished(events)
    if ended is not None:
        if not (run_dir / "summary.json").exists():  # the process died between its last event and the summary
            wall = worked_s(events)  # the journal's own figure: the best left
            write_json_atomic(run_dir / "summary.json", summarize(events, info, wall).model_dump(mode="json"))
        if info.sandbox == "docker":
            notes += clear_finished_run(run_dir)
        return Resumed(
            None, notes + [f"The run already finished ({ended.reason}: {ended.message}); nothing to resume."]
        )

    unbranched = info.fork if info.fork is not None and not branched(info.fork.inherited, events) else None
    if unbranched is not None and not first_branch:
        notes.append("The fork's branch was not built when its process stopped: it is built again from the start.")
        journal.append(RunResumed(step=unbranched.at_step, from_seq=0, notes=notes))
    if info.sandbox == "none" and unbranched is None:  # only chess games run without a sandbox (evals/chess/runner.py)
        raise HarnessError(
            f"{run_dir} is a chess game: its board and opponent live in the chess runner, not in the journal, so "
            "`harness resume` cannot continue it. Play the unfinished games of its batch again with "
            "`harness chess --resume BATCH_DIR` (same settings); finished games are kept."
        )
    task, policy = Task.model_validate(info.task), HarnessPolicy.model_validate(info.policy)
    with client_for(
        model or info.model, policy.dispatch.tool_timeout_s
    ) as client:  # one loaded from a model string is closed here
        continue_model(client, fold(events).model_replies)
        if unbranched is not None:  # a fork not branched yet: its branch is built first (agent.branch)
            summary, said = branch(run_dir, info, journal, client, events, how)
            return Resumed(summary, notes + said)
        if begun(events):
            snap, why = load_snapshot(run_dir)
            notes += [why] if why is not None else []
            restored = restore(task, events, snap)
            notes += restored.notes + describe_open_step(restored)
            box, note, since = reconnect(info, run_dir, task, policy, how.sandbox, events, snap, journal)
            notes += [note] if note is not None else []
        else:  # it stopped before its first step, perhaps while its sandbox was being prepared: begin again
            restored, since = None, None
            box = begin_again(info, run_dir, how.sandbox, journal)
            notes.append("The run had not begun when it stopped; it starts from the beginning.")
        with reopen_run(info, journal, client, box, how, begins=restored is None) as session:
            if since is not None:  # the container came back from a checkpoint: the writes after it are applied again
                ctx = ToolContext(sandbox=box, timeout_s=policy.dispatch.tool_timeout_s)
                inner = [t for t in session.program_tools or () if session.tools.get(t.name) is None]
                failed = reapply_writes(events, since, Registry.of([*session.tools, *inner]), ctx)
                if failed:
                    notes.append(f"These writes after the checkpoint could not be applied again: {', '.join(failed)}.")
            step, since_seq = (restored.state.step, restored.from_seq) if restored is not None else (0, 0)
            journal.append(RunResumed(step=step, from_seq=since_seq, notes=notes))
            summary = run(
                session, approvals=restored.approvals if restored else None, resumed=restored, summariser=how.summariser
            )
    if info.sandbox == "docker" and summary.stop_reason not in RESUMABLE:  # the container is gone now: a checkpoint
        clear_finished_run(run_dir)  # it was started from could not be removed at the stop, and can be now
    return Resumed(summary, notes)


def begun(events: Sequence[Event]) -> bool:
    """Whether the run took its first step: a process killed, or stopped by a signal, while the run was being
    opened (its sandbox started, the task's files and setup put in) left only its sandbox, its stop and its
    resumes, and the run begins again, setup included."""
    return any(not isinstance(e, SandboxOpened | RunStopped | RunResumed) for e in events)


def finished(events: Sequence[Event]) -> RunStopped | None:
    """The stop that ended the run for good, or None when it can go on (or never stopped: a crash)."""
    last = next((e for e in reversed(events) if not isinstance(e, ApprovalGiven)), None)
    if isinstance(last, RunStopped) and last.reason not in RESUMABLE:
        return last
    return None


def clear_finished_run(run_dir: Path) -> list[str]:
    """Remove what the process of a finished Docker run died before removing: its container and checkpoints."""
    from sandboxes.docker_container import DockerUnavailable
    from sandboxes.docker_runs import discard_checkpoints, remove_containers

    try:
        removed = remove_containers(run_dir) + discard_checkpoints(run_dir)
    except DockerUnavailable as e:
        return [f"Its containers could not be looked for ({e}); `harness sandbox prune` removes them later."]
    return [f"Removed what its process left behind: {', '.join(removed)}."] if removed else []


def continue_model(client: ModelClient, replies: int) -> None:
    if isinstance(client, ScriptedModel):
        client.calls = replies  # its next reply is the first the journal does not hold


def make_box(info: RunInfo, run_dir: Path, factory: SandboxFactory | None) -> Sandbox:
    workspace = run_dir / "workspace"
    if factory is not None:
        return factory(workspace)
    return open_sandbox(recorded_sandbox(info, "resume"), workspace)


def begin_again(info: RunInfo, run_dir: Path, factory: SandboxFactory | None, journal: Journal) -> Sandbox:
    """A new sandbox for a run that died before its first step. A container the dead process started
    is removed, and a local workspace emptied: the task's files and setup may be only half there (a setup that
    cannot run twice in one folder, `mkdir` or `git commit`, would fail), and a container would be left running."""
    if info.sandbox == "docker" and factory is None:
        from sandboxes.docker_runs import remove_containers

        remove_containers(run_dir)
    if info.sandbox == "local" and factory is None:
        shutil.rmtree(run_dir / "workspace", ignore_errors=True)
    box = make_box(info, run_dir, factory)
    container = getattr(box, "container_id", None)
    if container is not None:
        journal.append(SandboxOpened(container_id=container))
    return box


def reconnect(
    info: RunInfo,
    run_dir: Path,
    task: Task,
    policy: HarnessPolicy,
    factory: SandboxFactory | None,
    events: Sequence[Event],
    snap: Snapshot | None,
    journal: Journal,
) -> tuple[Sandbox, str | None, int | None]:
    """The run's sandbox again, a note for the person, and the checkpoint step whose later writes must be
    applied again (None when nothing was lost). The local one's workspace persists under the run dir; a
    container is reconnected while it runs, else recreated from its newest checkpoint; anything else is made anew."""
    workspace = run_dir / "workspace"
    if info.sandbox == "docker" and factory is None:
        found = reattach_container(run_dir, info, events, snap, journal)
        if found is not None:
            return found
    kept = info.sandbox == "local" and factory is None and workspace.is_dir()
    box = make_box(info, run_dir, factory)
    if kept:
        return box, None, None
    if factory is not None and workspace.is_dir() and any(workspace.iterdir()):
        return box, None, None
    prepare(task, box, policy.dispatch.tool_timeout_s)
    return (
        box,
        (
            f"The {info.sandbox} sandbox could not be reconnected, so it was recreated from the task's files and setup: "
            "changes the run made to it before are gone."
        ),
        None,
    )


def reattach_container(
    run_dir: Path, info: RunInfo, events: Sequence[Event], snap: Snapshot | None, journal: Journal
) -> tuple[Sandbox, str, int | None] | None:
    from sandboxes.docker_runs import SandboxGone, reattach
    from sandboxes.docker_shells import ShellState

    opened = [e for e in events if isinstance(e, SandboxOpened)]
    handle = snap.sandbox if snap is not None else {}
    state = ShellState(cwd=handle.get("cwd") or info.workdir or "/workspace", env=handle.get("env", {}))
    try:
        again = reattach(run_dir, opened[-1].container_id if opened else None, state)
    except SandboxGone:
        return None
    box, since = again.sandbox, again.checkpoint.step if again.checkpoint is not None else None
    journal.append(SandboxOpened(container_id=box.container_id, how=again.how, checkpoint_step=since))
    if since is None:
        return (
            box,
            f"Reconnected to the run's container {box.container_id[:12]}, still running; a fresh shell goes on in {state.cwd}.",
            None,
        )
    return (
        box,
        (
            f"The run's container was gone; a new one started from its checkpoint at step {since}, "
            "and the writes journaled after that step are applied again."
        ),
        since,
    )


def describe_open_step(restored: Restored) -> list[str]:
    if restored.open is None:
        return []
    calls = restored.open.reply.message.tool_calls
    rec = restored.open.recovered
    lines = [
        f"Step {restored.state.step} did not finish: {len(rec.observed)} of its {len(calls)} calls have results; "
        "the rest are dispatched now (the model is not asked again)."
    ]
    for call_id, task in rec.tasks.items():
        if call_id not in rec.observed:
            lines.append(
                f"Call {call_id} ({task.tool}) was waiting on task {task.task_id} of MCP server {task.server} when "
                "the process stopped: it follows that task again (re-attaches) instead of calling the tool again."
            )
    for call_id, intent in rec.interrupted.items():
        made = [o for o in rec.inner.values() if o.parent == call_id]
        if call_id in rec.tasks:
            continue
        if intent.tool == RUN_CODE:
            cut = [i.call_id for i in rec.inner_interrupted.values() if i.parent == call_id]
            lines.append(
                f"Call {call_id} ({intent.tool}) was running when the process died: its program runs again, the "
                f"{len(made)} calls it had made answered from the journal"
                + (f", the write {cut[0]} it was making reconciled as a direct one" if cut else "")
                + "."
            )
            continue
        lines.append(
            f"Call {call_id} ({intent.tool}) was running when its process stopped (killed, or a signal abandoned it): "
            "it is reconciled "
            "(the tool's own check, else the policy's checkpoint.interrupted_writes)."
        )
    return lines
