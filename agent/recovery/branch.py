"""What a fork inherits from its parent's record, and whether a run can be forked at a step.

A fork at step N begins its journal with the parent's events of steps 0..N, in order, without the records of the
parent's own processes (the containers it opened, its resumes, stops and approvals): those say what happened to
the parent, not what the agent saw. A step can be branched from once it finished: its reply and one observation
per call are journaled. Pure functions of the parent's events.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from agent.journal.fold import Folded, fold
from agent.journal.store import Scan
from core.errors import HarnessError
from core.events import (
    ApprovalGiven,
    Compacted,
    ContextOverflowed,
    Event,
    Forked,
    InnerIntent,
    RunResumed,
    RunStopped,
    SandboxOpened,
    ToolIntent,
    ToolObserved,
)
from core.journal_lock import run_alive
from tools.mcp.adapter import SEPARATOR  # an MCP tool is named SERVER__tool

LEFT_BEHIND = (SandboxOpened, RunResumed, RunStopped, ApprovalGiven)


def inherited(events: Sequence[Event], at_step: int) -> list[Event]:
    """The parent's events a fork at `at_step` begins with (their seq as the parent's: the fork renumbers them)."""
    out: list[Event] = []
    for e in events:
        if e.step > at_step:
            break
        if not isinstance(e, LEFT_BEHIND):
            out.append(e)
    return out


def finished_steps(run: Folded) -> int:
    """The last step a fork can branch after: steps 1..it each have a reply and one observation per call."""
    last = 0
    for step in run.steps:
        if step.n == 0:
            continue
        observed = {o.observation.call_id for o in step.observed}
        if step.replied is None or step.n != last + 1 or any(c.id not in observed for c in step.calls):
            break
        last = step.n
    return last


def check_branch_point(run_dir: Path, found: Scan, at: str) -> tuple[Folded, int]:
    """The parent's fold and the step to branch after (`at`: a number or a rule, see `branch_step`), once it is
    known a fork there can be made; else one HarnessError saying why."""
    if run_alive(run_dir):
        raise HarnessError(
            f"Run {run_dir.name} is still running (a process holds its journal), so its record may still change: "
            "fork it once it stops. `harness resume` finishes a run whose process died."
        )
    if found.damage is not None:
        raise HarnessError(
            f"{run_dir}/events.jsonl is damaged: {found.damage.why}. The events after it cannot be trusted, so the "
            f"run is not forked. `harness resume {run_dir} --repair` cuts the journal after its last good event "
            "(keeping the cut part as events.jsonl.damaged-N); the repaired run can be forked."
        )
    run = fold(found.events)
    at_step = branch_step(run, at)
    last = finished_steps(run)
    if at_step < 0 or at_step > last:
        ended = f"it stopped after step {run.stop.step} ({run.stop.reason})" if run.stop else "it has no stop"
        open_step = f"; step {last + 1} did not finish (its calls have no results)" if run.last_step > last else ""
        raise HarnessError(
            f"Run {run_dir.name} cannot be forked at step {at_step}: "
            + (f"its finished steps are 1 to {last}" if last else "it has no finished step")
            + f" ({ended}{open_step}). Give --at-step "
            + (f"from 0 to {last}." if last else "0: the fork begins from the task, in the run's world before it.")
        )
    return run, at_step


def writes_upto(events: Sequence[Event], after: int, upto: int) -> list[tuple[ToolIntent, ToolObserved]]:
    """The writes of steps after..upto that finished, in the order they ran, each with its observation. A write
    a crash cut short and a resume ran again journaled its intent twice: it counts once, where it last ran."""
    observed = {e.observation.call_id: e for e in events if isinstance(e, ToolObserved)}
    last: dict[str, ToolIntent] = {}
    for e in events:
        if isinstance(e, ToolIntent) and after < e.step <= upto and e.call_id in observed:
            last.pop(e.call_id, None)
            last[e.call_id] = e
    return [(intent, observed[intent.call_id]) for intent in last.values()]


def outside_write(events: Sequence[Event], upto: int, servers: Collection[str]) -> ToolIntent | InnerIntent | None:
    """The first write of steps 1..upto made through one of the MCP `servers` (a direct call, or a run_code
    program's), whose effect lives in the server: the harness cannot run it again to rebuild a fork's world.
    A write denied or refused before it ran journaled no intent, so it is not one."""
    for e in events:
        if e.step > upto:
            break
        if isinstance(e, ToolIntent | InnerIntent) and e.tool.partition(SEPARATOR)[0] in servers:
            return e
    return None


def refuse_outside_write(run_name: str, at_step: int, write: ToolIntent | InnerIntent) -> HarnessError:
    by = f"a run_code program (call {write.parent}) called" if isinstance(write, InnerIntent) else "called"
    server = write.tool.partition(SEPARATOR)[0]
    earlier = f"--at-step {write.step - 1} (before it)" if write.step > 1 else "no step: it was the first"
    return HarnessError(
        f"Run {run_name} cannot be forked at step {at_step}: its step {write.step} {by} the MCP tool {write.tool} "
        f"(call {write.call_id}), a write whose effect lives in the MCP server {server!r}, outside the sandbox. "
        "The harness rebuilds a fork's world by running the parent's writes again, and cannot run that one again "
        f"(it would act on the server a second time) nor undo it, so a fork there would start from a world that is "
        f"not its parent's. Fork it at {earlier}; reads through MCP servers do not stand in the way."
    )


def reshaped_before(events: Sequence[Event]) -> bool:
    """Whether the inherited events hold a fold or a cut: the context a fork's other policy must make again."""
    return any(isinstance(e, (Compacted, ContextOverflowed)) for e in events)


BEFORE_FIRST_COMPACTION = "before-first-compaction"


def branch_step(run: Folded, at: str) -> int:
    """The step a fork branches after: a number, or `before-first-compaction`, the last step before the one whose
    prompt (or the next one) the run's first fold or cut reshaped, so every fork's context starts unfolded."""
    if at.strip().isdigit():
        return int(at)
    if at != BEFORE_FIRST_COMPACTION:
        raise HarnessError(f"--at-step must be a step number or {BEFORE_FIRST_COMPACTION}, not {at!r}.")
    first = next((e for e in run.reshaping() if e.fold is not None or isinstance(e, ContextOverflowed)), None)
    if first is None:
        raise HarnessError(
            f"The run made no compaction, so it has no step {BEFORE_FIRST_COMPACTION}; give a step number."
        )
    return max(0, first.step - 1)


def branched(inherited_events: int, events: Sequence[Event]) -> bool:
    """Whether a fork's own branch is journaled: a `forked` event after the events it inherited (which may hold
    its parent's own branch, for a fork of a fork)."""
    return any(isinstance(e, Forked) and e.seq > inherited_events for e in events)
