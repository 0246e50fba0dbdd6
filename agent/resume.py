"""Continue a run from its directory: after a crash (even kill -9), an approval stop, or an interrupt.

Load the latest snapshot, rebuild the state from the journal (agent.restore),
reconnect the sandbox (or recreate it, and say so), make the same model continue
where it was (a scripted model skips the replies already journaled), and go on
with the loop, which first finishes any step the dead process began.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import HarnessError
from core.events import ApprovalGiven, Event, RunResumed, RunStopped
from agent.journal import Journal, RunInfo, read_events, read_run_info, write_json_atomic
from agent.launch import make_sandbox, prepare
from agent.loop import run
from agent.models import load_model
from agent.models.base import ModelClient
from agent.models.scripted import ScriptedModel
from core.policy import HarnessPolicy
from agent.restore import Restored, restore
from agent.snapshot import load_snapshot
from agent.stopping import StopRule
from agent.summariser_calls import replies_given
from agent.summary import Summary, summarize
from agent.task import Task
from sandboxes.base import Sandbox
from tools.base import Registry
from tools.builtin import standard_tools
from tools.mcp import with_mcp

# A run that stopped for one of these can go on; any other stop is the end of it.
RESUMABLE = ("awaiting_approval", "interrupted", "model_unavailable")


@dataclass
class Resumed:
    summary: Summary | None  # None when there was nothing to resume
    notes: list[str] = field(default_factory=list)  # what a person should know: damaged lines, fallbacks, reconciled calls


def resume(
    run_dir: Path,
    model: str | ModelClient | None = None,
    tools: Registry | None = None,
    sandbox: Callable[[Path], Sandbox] | None = None,
    listeners: Sequence[Callable[[Event], None]] = (),
    stop_rules: Sequence[StopRule] = (),
) -> Resumed:
    """Continue the run in `run_dir` until it stops again. `model` defaults to the one in run.json."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    journal = Journal(run_dir)  # first of all: it refuses while another process is writing this run
    journal.listeners.extend(listeners)
    try:
        return _resume(run_dir, info, journal, model, tools, sandbox, stop_rules)
    finally:
        journal.close()


def _resume(run_dir: Path, info: RunInfo, journal: Journal, model: str | ModelClient | None, tools: Registry | None,
            sandbox: Callable[[Path], Sandbox] | None, stop_rules: Sequence[StopRule]) -> Resumed:
    notes: list[str] = []
    events = read_events(run_dir, on_bad_line=lambda n, why: notes.append(
        f"events.jsonl line {n} is damaged (cut short by a crash mid-write?) and was skipped: {why}"))
    ended = finished(events)
    if ended is not None:
        if not (run_dir / "summary.json").exists():  # the process died between its last event and the summary
            wall = events[-1].ts - events[0].ts  # the journal's own span: the best figure left
            write_json_atomic(run_dir / "summary.json", summarize(events, info, wall).model_dump(mode="json"))
        return Resumed(None, notes + [f"The run already finished ({ended.reason}: {ended.message}); nothing to resume."])

    if info.sandbox == "none":  # only chess games run without a sandbox (evals/chess/runner.py)
        raise HarnessError(
            f"{run_dir} is a chess game: its board and opponent live in the chess runner, not in the journal, so "
            "`harness resume` cannot continue it. Play the unfinished games of its batch again with "
            "`harness chess --resume BATCH_DIR` (same settings); finished games are kept."
        )
    task, policy = Task.model_validate(info.task), HarnessPolicy.model_validate(info.policy)
    client = continue_model(model or info.model, replies_given(events))
    if events:
        snap, why = load_snapshot(run_dir)
        notes += [why] if why is not None else []
        restored = restore(task, events, snap)
        notes += restored.notes + describe_open_step(restored)
        box, note = reconnect(info.sandbox, run_dir, task, policy, sandbox)
        notes += [note] if note is not None else []
    else:  # it died before its first event, perhaps while its sandbox was being prepared: begin again
        restored = None
        box = sandbox(run_dir / "workspace") if sandbox is not None else make_sandbox(info.sandbox, run_dir / "workspace")
        notes.append("The run had not begun when it stopped; it starts from the beginning.")
    try:
        if restored is None:
            prepare(task, box, policy.dispatch.tool_timeout_s)
        else:
            journal.append(RunResumed(step=restored.state.step, from_seq=restored.from_seq, notes=notes))
        with with_mcp(policy.mcp, tools or standard_tools()) as registry:
            summary = run(task, client, registry, box, policy, journal, approvals=restored.approvals if restored else None,
                          stop_rules=stop_rules, resumed=restored)
    finally:
        box.close()
    return Resumed(summary, notes)


def finished(events: Sequence[Event]) -> RunStopped | None:
    """The stop that ended the run for good, or None when it can go on (or never stopped: a crash)."""
    last = next((e for e in reversed(events) if not isinstance(e, ApprovalGiven)), None)
    if isinstance(last, RunStopped) and last.reason not in RESUMABLE:
        return last
    return None


def continue_model(model: str | ModelClient, replies: int) -> ModelClient:
    client = load_model(model) if isinstance(model, str) else model
    if isinstance(client, ScriptedModel):
        client.calls = replies  # its next reply is the first the journal does not hold
    return client


def reconnect(kind: str, run_dir: Path, task: Task, policy: HarnessPolicy,
              factory: Callable[[Path], Sandbox] | None) -> tuple[Sandbox, str | None]:
    """The run's sandbox again: the local one's workspace persists under the run dir; others are made anew."""
    workspace = run_dir / "workspace"
    if factory is None and kind == "local" and workspace.is_dir():
        return make_sandbox(kind, workspace), None
    box = factory(workspace) if factory is not None else make_sandbox(kind, workspace)
    if factory is not None and workspace.is_dir() and any(workspace.iterdir()):
        return box, None
    prepare(task, box, policy.dispatch.tool_timeout_s)
    return box, (
        f"The {kind} sandbox could not be reconnected, so it was recreated from the task's files and setup: "
        "changes the run made to it before are gone. (Recreating a sandbox from the recorded workspace state "
        "is not implemented yet.)"
    )


def describe_open_step(restored: Restored) -> list[str]:
    if restored.open is None:
        return []
    calls = restored.open.reply.message.tool_calls
    rec = restored.open.recovered
    lines = [f"Step {restored.state.step} did not finish: {len(rec.observed)} of its {len(calls)} calls have results; "
             "the rest are dispatched now (the model is not asked again)."]
    for call_id, intent in rec.interrupted.items():
        lines.append(f"Call {call_id} ({intent.tool}) was running when the process died: it is reconciled "
                     "(the tool's own check, else the policy's checkpoint.interrupted_writes).")
    return lines
