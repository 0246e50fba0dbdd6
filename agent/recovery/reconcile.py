"""What a resumed run does with the step a crashed process left unfinished.

The journal says, per call of that step's reply: its result was journaled (take it
as it was, run nothing), or only its write-ahead intent was (the process died while
the tool ran: reconcile), or neither (dispatch it normally). Reads are simply run
again; an interrupted write asks its tool whether its effect is already in place
(`Tool.already_done`) and otherwise follows `checkpoint.interrupted_writes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent.recovery.approval import Decision
from core.events import Event, InnerIntent, InnerObserved, ProgramFiles, TaskCreated, ToolIntent, ToolObserved
from core.policy import CheckpointPolicy
from core.types import Observation, ToolCall
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult

UNKNOWN = (
    "The run was interrupted while {tool} was running (call {id}), so whether it took effect is unknown. "
    "Check the current state before acting again."
)
NOT_RERUN = (
    "Not run again: the run was interrupted while {tool} was running (call {id}) and the user chose not to "
    "run it again, so whether it took effect is unknown. Check the current state before acting again."
)


@dataclass(frozen=True)
class Recovered:
    observed: dict[str, ToolObserved] = field(default_factory=dict)  # call id -> its journaled result
    interrupted: dict[str, ToolIntent] = field(default_factory=dict)  # write calls with an intent and no result
    rerun: dict[str, Decision] = field(default_factory=dict)  # decisions on re-running them, given after the crash
    nudged: bool = False  # the no-tool-call nudge of this step is already journaled
    asked: dict[str, list[str]] = field(default_factory=dict)  # call id -> ids of the questions its tool asked
    # The calls run_code programs of this step made (by id, PARENT.N): journaled results, and writes cut short;
    # and the files each program's first run found (by the run_code call's id).
    inner: dict[str, InnerObserved] = field(default_factory=dict)
    inner_interrupted: dict[str, InnerIntent] = field(default_factory=dict)
    files: dict[str, ProgramFiles] = field(default_factory=dict)
    # Calls whose work went on as an MCP server's task (by call id): a resumed call follows that task to its end
    # (re-attaching) instead of running again, so none of them is settled or asked about here.
    tasks: dict[str, TaskCreated] = field(default_factory=dict)


def needs_decision(call: ToolCall, tool: Tool, policy: CheckpointPolicy, recovered: Recovered) -> bool:
    """An interrupted write that waits for `harness approve` before it may run again."""
    return (
        call.id in recovered.interrupted
        and call.id not in recovered.tasks
        and not tool.resumes
        and tool.already_done is None
        and policy.interrupted_writes == "ask"
        and call.id not in recovered.rerun
    )


def settle(
    call: ToolCall, tool: Tool, args: Any, ctx: ToolContext, policy: CheckpointPolicy, recovered: Recovered
) -> ToolResult | Observation | None:
    """For an interrupted write: the result it already had, a final observation, or None to run it again."""
    if call.id in recovered.asked:  # its server was told the question was dismissed, so it did not act: ask again
        return None
    if tool.already_done is not None:
        try:
            return tool.already_done(args, ctx)  # None: not in place, so running it cannot apply it twice
        except Exception:  # the check itself failed (a dead sandbox): fall back on the policy
            pass
    rule = policy.interrupted_writes
    if rule == "rerun":
        return None
    if rule == "ask" and call.id in recovered.rerun:
        decision = recovered.rerun[call.id]
        if decision.approved:
            return None
        note = f" Their note: {decision.note}" if decision.note else ""
        return _final(call, "denied", NOT_RERUN.format(tool=call.name, id=call.id) + note, "denied")
    return _final(call, "error", UNKNOWN.format(tool=call.name, id=call.id), "interrupted")


def _final(call: ToolCall, status, text: str, kind) -> Observation:
    return Observation(call_id=call.id, tool=call.name, status=status, text=text, error_kind=kind)


def reapply_writes(events: Sequence[Event], after_step: int, tools: Registry, ctx: ToolContext) -> list[str]:
    """Run again every write that finished after `after_step`, a run_code program's own writes included: a
    sandbox recreated from a checkpoint taken at that step lacks their effects. The journaled observations
    stand; what a write shows now is not recorded. Returns the calls that could not be applied again."""
    done = {e.observation.call_id for e in events if isinstance(e, ToolObserved | InnerObserved)}
    failed = []
    for e in events:
        if not (isinstance(e, ToolIntent | InnerIntent) and e.step > after_step and e.call_id in done):
            continue
        tool = tools.get(e.tool)
        if tool is None:  # the run's tool set no longer has it
            failed.append(f"{e.call_id} ({e.tool})")
            continue
        if tool.effect is Effect.NOTE or tool.resumes:  # the harness's own store, or a program's journaled calls
            continue
        try:
            result = tool.run(tool.args.model_validate(e.arguments), replace(ctx, idempotency_key=e.idempotency_key))
            ok = result.ok
        except Exception:
            ok = False
        if not ok:
            failed.append(f"{e.call_id} ({e.tool})")
    return failed
