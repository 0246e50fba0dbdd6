"""A fork goes its own way from its branch point: its world rebuilt as the parent's was after that step, and
checked; its context folded again under its own policy; the branch journaled; then the loop.

`agent.resume` calls `branch` for a fork whose `forked` event is not journaled yet: the first time (`harness
fork` wrote the fork's folder and inherited journal, then resumes it), and again after a process died while
building the branch, when what the dead attempt built (a workspace, a container) is dropped and made anew.

The world is rebuilt the cheapest exact way. A Docker fork starts from the newest checkpoint kept for forks
(`checkpoint.fork_every`) at or before the branch, its parent's or an older ancestor's, else from the task's image
and setup; a local fork from the task's files and setup. Then every write journaled after that point, up to the
branch, runs again in the order it ran, and what it gives must be what was recorded once volatile text (times,
ids, the run folders) is normalised. Where it is not, the world has drifted: the fork stops (`world_diverged`)
naming the step, the call and the difference, and never goes on from a world that is not its parent's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.journal.fold import fold
from agent.journal.store import Journal, RunInfo, read_events, read_run_info
from agent.journal.summary import Summary, summarize
from agent.journal.tools import record_tools
from agent.loop import begin, compacted, run
from agent.models.base import ModelClient
from agent.rebuild import Drift, rebuild_tools, redo
from agent.recovery.approval import Decision
from agent.recovery.restore import Restored, restore
from agent.reopen import Reopening, reopen_run
from agent.run.state import RunState
from agent.run.task import Task
from agent.session import SandboxFactory, open_sandbox, prepare, recorded_sandbox
from core.events import Compacted, Event, Forked, RunStopped, SandboxOpened
from core.memory_types import Fold
from core.policy import CodeLimits, HarnessPolicy
from memory.extractive import ExtractiveSummariser
from sandboxes.base import Sandbox
from sandboxes.manifest import digest, manifest
from tools.base import Registry, ToolContext
from tools.code_mode.tool import NAME as RUN_CODE

WORLD_ARTIFACT = "world_at_branch.json"


def branch(
    run_dir: Path,
    info: RunInfo,
    journal: Journal,
    client: ModelClient,
    events: Sequence[Event],
    how: Reopening,
    approvals: Mapping[str, bool | Decision] | None = None,
) -> tuple[Summary, list[str]]:
    """Build the fork's branch from its inherited `events` and run it to a stop, taken up as `how` says (as any
    resume); the summary and notes. `approvals` are a replay's first life's: the recorded fork's decisions."""
    assert info.fork is not None
    origin, task = info.fork, Task.model_validate(info.task)
    policy = HarnessPolicy.model_validate(info.policy)
    began = time.monotonic()
    box, since, started = world_start(info, run_dir, how.sandbox, journal)
    notes: list[str] = []
    with reopen_run(info, journal, client, box, how) as session:
        record_tools(
            journal, info, session.tools, session.program_tools
        )  # the fork's policy may offer other tools than its parent's
        if since is None:
            prepare(task, box, policy.dispatch.tool_timeout_s)
        ctx = ToolContext(sandbox=box, timeout_s=policy.dispatch.tool_timeout_s)
        folders = [origin.parent_dir, str(run_dir.resolve())]
        played = how.programs or (how.tools.get(RUN_CODE) if how.tools is not None else None)
        again = rebuild_tools(session.tools, session.program_tools, parent_code(origin.parent_dir, policy), played)
        done, drift = redo(events, since or 0, origin.at_step, again, ctx, run_dir, folders, notes)
        if drift is not None:
            return diverged(journal, info, origin.at_step, drift, time.monotonic() - began), notes
        world, world_sha = world_of(info, box, session.tools, journal)
        loop = begin(session, {}, Restored(RunState(task=task, step=origin.at_step), None, {}, 0), None)
        folded = reshape(loop, events) if origin.reshape else []
        said = [*origin.changes, *([f"context folded again under {policy.name}: {m}" for m in folded_notes(folded)])]
        journal.append(
            Forked(
                step=origin.at_step,
                parent=origin.parent,
                parent_dir=origin.parent_dir,
                inherited=origin.inherited,
                world=f"{started}, then {done} writes run again and checked; {world}",
                world_sha256=world_sha,
                reshaped=origin.reshape,
                notes=said + notes,
            )
        )
        for made in folded:
            journal.append(made)
        restored = restore(task, read_events(run_dir), None)
        given = {**restored.approvals, **(approvals or {})}
        return run(session, approvals=given, resumed=restored, summariser=how.summariser), notes


def world_start(
    info: RunInfo, run_dir: Path, factory: SandboxFactory | None, journal: Journal
) -> tuple[Sandbox, int | None, str]:
    """A sandbox for the fork's world, the step its files are from (None: none yet, the task's setup comes first),
    and how it was made, in words. What a dead attempt left of the fork's world is dropped first."""
    workspace = run_dir / "workspace"
    if factory is not None:
        return factory(workspace), None, "a sandbox from the task's files and setup"
    spec = recorded_sandbox(info, "fork")
    if info.sandbox == "local":
        shutil.rmtree(workspace, ignore_errors=True)
        return open_sandbox(spec, workspace), None, "the task's files and setup"
    if info.sandbox != "docker":
        return open_sandbox(spec, workspace), None, "the task's tools"
    from sandboxes.docker_runs import from_checkpoint, remove_containers
    from sandboxes.docker_shells import ShellState

    remove_containers(run_dir)
    assert info.fork is not None
    cp = nearest_checkpoint(info.fork.parent_dir, info.fork.at_step)
    if cp is None:
        box = open_sandbox(spec, workspace)
        journal.append(SandboxOpened(container_id=box.container_id))  # type: ignore[attr-defined]
        return box, None, f"the image {info.image or 'harness-base'} and the task's setup"
    state = cp.shell or ShellState(cwd=info.workdir or "/workspace")
    box = from_checkpoint(cp, run_dir.resolve(), state)
    journal.append(SandboxOpened(container_id=box.container_id, how="checkpoint", checkpoint_step=cp.step))
    return box, cp.step, f"the checkpoint {cp.image[7:19]} of {Path(cp.run_dir).name} after step {cp.step}"


def nearest_checkpoint(parent_dir: str, at_step: int):
    """The newest checkpoint kept for forks, at or before `at_step`, of the parent or (for the steps a fork
    inherited) of its ancestors; None when there is none."""
    from sandboxes.docker_runs import checkpoints

    found = []
    where, upto = Path(parent_dir), at_step
    while (where / "run.json").is_file():
        found += [c for c in checkpoints(where) if c.kept and c.step <= upto]
        origin = read_run_info(where).fork
        if origin is None:
            break
        where, upto = Path(origin.parent_dir), min(upto, origin.at_step)
    return max(found, key=lambda c: c.step, default=None)


def parent_code(parent_dir: str, policy: HarnessPolicy) -> CodeLimits | None:
    """The run_code limits the parent's programs ran under (None: it ran in calls mode); the fork's own policy's
    where the parent's folder is gone."""
    parent = (
        HarnessPolicy.model_validate(read_run_info(Path(parent_dir)).policy)
        if Path(parent_dir, "run.json").is_file()
        else policy
    )
    return parent.dispatch.code if parent.dispatch.mode != "calls" else None


def world_of(info: RunInfo, box: Sandbox, tools: Registry, journal: Journal) -> tuple[str, str | None]:
    """The rebuilt world in words and its digest: a game's position, or every file of the workspace (kept as
    artifacts/world_at_branch.json); no digest for a world the harness cannot read."""
    if tools.world is not None:
        line = tools.world()
        return line, hashlib.sha256(line.encode()).hexdigest()
    if info.sandbox not in ("local", "docker"):
        return "no files to compare", None
    files = manifest(box)
    journal.store_artifact(WORLD_ARTIFACT, json.dumps(files, indent=1, sort_keys=True))
    return f"{len(files)} files (artifacts/{WORLD_ARTIFACT})", digest(files)


def reshape(loop, events: Sequence[Event]) -> list[Compacted]:
    """The compactions the fork's policy would have made over the inherited steps, each after its step, made
    with the extractive summariser (the same one `harness rerender` folds with): the context at the branch."""
    run = fold(events)
    history, replies = run.history, run.replies
    ends = [s.history_at for s in replies[1:]] + [len(history)]
    summariser = ExtractiveSummariser(loop.accounting.counter)
    store, shown_memory = loop.session.memory, loop.session.policy.memory.superseded_shown
    folds: list[Fold] = []
    made: list[Compacted] = []
    for step, end in zip(replies, ends, strict=True):
        memory = (lambda n=step.n: store.as_of(n, shown_memory)) if store is not None else None
        result = loop.renderer.compact_if_due(history[:end], folds, step.n, summariser, loop.shown, None, memory)
        if result is None or not (result.ok or result.attempts):
            continue
        if result.fold is not None:
            folds.append(result.fold)
        made.append(
            compacted(
                loop.state.step, result, f"made again at the branch, as after step {step.n}. {result.message}".strip()
            )
        )
    return made


def folded_notes(made: Sequence[Compacted]) -> list[str]:
    if not made:
        return ["no fold by the branch (the parent's folds and cuts are left behind)"]
    return [
        f"steps {c.fold.first_step}-{c.fold.last_step} folded into memory v{c.version}"
        for c in made
        if c.fold is not None
    ]


def diverged(journal: Journal, info: RunInfo, at_step: int, drift: Drift, wall_s: float) -> Summary:
    """The fork stops before its first step of its own: its world is not its parent's."""
    message = (
        f"The world has drifted: call {drift.call_id} ({drift.tool}) of step {drift.step}, run again to rebuild "
        f"the parent's world after step {at_step}: {drift.what}. The fork does not go on from another world."
    )
    outcome = {"step": drift.step, "call_id": drift.call_id, "tool": drift.tool}
    if drift.diff:
        outcome["diff"] = journal.store_artifact("world_diverged.diff", drift.diff)
    journal.append(RunStopped(step=at_step, reason="world_diverged", message=message, outcome=outcome))
    summary = summarize(read_events(journal.dir), info, wall_s)
    journal.write_summary(summary)
    return summary
