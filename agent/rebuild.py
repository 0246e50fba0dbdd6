"""A fork's world rebuilt by running its parent's writes again, in the order they ran, each checked against
what it gave then (agent.branch builds the rest of the branch around it).

A direct write runs again as the tool it was. A run_code program runs again whole, in the fork's sandbox, so
what it wrote itself (a file it opened) is written again too; its calls are answered as a dispatcher would,
but from the parent's record: each must be the call the parent's program made (the same tool and arguments,
in the same order), a write among them runs again and is checked as a direct one, a read or a memory call
gets the reply the parent's got. Then the program's own observation (what it printed, its calls, the files it
changed) is checked as a direct write's. The first difference is a `Drift`: the world is not the parent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.recovery.branch import writes_upto
from core.events import Event, InnerIntent, InnerObserved, ToolIntent
from core.policy import CodeLimits
from core.types import Observation
from core.volatile import differences
from sandboxes.base import SandboxDead
from tools.base import Effect, InnerReply, Registry, Tool, ToolContext, ToolResult
from tools.code_mode.tool import NAME as RUN_CODE
from tools.code_mode.tool import run_code_tool


@dataclass(frozen=True)
class Drift:
    """A write that gave something else than the parent recorded: the world is not the parent's."""

    step: int
    call_id: str
    tool: str
    what: str  # one line
    diff: str = ""


def rebuild_tools(
    offered: Registry, program_tools: Registry | None, parent_code: CodeLimits | None, given: Tool | None = None
) -> Registry:
    """The tools the parent's writes run again with: every tool of the fork's (those offered and those its
    programs may call), and run_code with the parent's limits where the parent ran programs (`parent_code`;
    None: it ran in calls mode), whatever the fork's own dispatch mode; `given`, a replay's run_code that plays
    the recorded programs back, instead."""
    every = {t.name: t for t in offered if t.name != RUN_CODE}
    every.update({t.name: t for t in program_tools or () if t.name != RUN_CODE})
    tools = list(every.values())
    if given is not None:
        tools.append(given)
    elif parent_code is not None:
        tools.append(run_code_tool(tools, parent_code, offered.world))
    return Registry.of(tools, world=offered.world)


def redo(
    events: Sequence[Event],
    since: int,
    upto: int,
    tools: Registry,
    ctx: ToolContext,
    run_dir: Path,
    folders: Sequence[str],
    notes: list[str],
) -> tuple[int, Drift | None]:
    """Run again every write of steps since+1..upto, in order, each checked against what it gave then: how many
    ran (a program's writes each count), and the first that gave something else."""
    done = 0
    inner = [e for e in events if isinstance(e, (InnerIntent, InnerObserved)) and since < e.step <= upto]
    for intent, seen in writes_upto(events, since, upto):
        tool = tools.get(intent.tool)
        if tool is not None and tool.effect is Effect.NOTE:
            continue  # the agent's memory: the store is rebuilt from the journal, not the world
        if not seen.observation.executed:
            notes.append(
                f"call {intent.call_id} ({intent.tool}) of step {intent.step} was cut short by a crash of the "
                "parent's process and its outcome is unknown, so it is not run again"
            )
            continue
        record = [e for e in inner if e.parent == intent.call_id]
        if tool is None:
            what = f"the fork offers no tool {intent.tool!r}, which the parent's step {intent.step} ran"
            return done, Drift(intent.step, intent.call_id, intent.tool, what)
        lacking = next((called(e) for e in record if tools.get(called(e)) is None), None)
        if lacking is not None:  # a program runs again whole: every function it called must be there to call
            what = (
                f"the fork offers no tool {lacking!r}, which the parent's step {intent.step} program "
                f"(call {intent.call_id}) called"
            )
            return done, Drift(intent.step, intent.call_id, intent.tool, what)
        program = Program(intent, record, tools, ctx, run_dir, folders)
        call_ctx = replace(ctx, program=program) if intent.tool == RUN_CODE else ctx
        now = run_again(tool.run, tool.args.model_validate(intent.arguments), intent, call_ctx)
        done += 1 + program.ran
        drift = program.drift or compare(intent, seen.observation, now, run_dir, folders)
        if drift is not None:
            return done, drift
    return done, None


def called(e: InnerIntent | InnerObserved) -> str:
    """The tool a program's call named."""
    return e.tool if isinstance(e, InnerIntent) else e.observation.tool


@dataclass
class Program:
    """The host of a run_code program run again to rebuild the world (tools.base.ProgramHost): each call
    answered from the parent's record of the same program, its writes run again and checked."""

    parent: ToolIntent
    record: Sequence[InnerIntent | InnerObserved]
    tools: Registry
    ctx: ToolContext
    run_dir: Path
    folders: Sequence[str]
    made: int = 0
    ran: int = 0
    drift: Drift | None = None
    answers: dict[str, InnerObserved] = field(init=False)
    intents: dict[str, InnerIntent] = field(init=False)

    def __post_init__(self) -> None:
        self.answers = {e.observation.call_id: e for e in self.record if isinstance(e, InnerObserved)}
        self.intents = {e.call_id: e for e in self.record if isinstance(e, InnerIntent)}

    def call(self, tool: str, arguments: str) -> InnerReply:
        self.made += 1
        call_id = f"{self.parent.call_id}.{self.made}"
        then = self.answers.get(call_id)
        if then is None or (then.observation.tool, then.arguments) != (tool, arguments):
            was = f"{then.observation.tool}({then.arguments})" if then is not None else "no call"
            what = f"its program's call {self.made} was {tool}({arguments}), where the parent's program made {was}"
            return self._stop(Drift(self.parent.step, call_id, tool, what))
        intent, used = self.intents.get(call_id), self.tools.get(tool)
        if intent is not None and then.observation.executed and used is not None and used.effect is Effect.WRITE:
            now = run_again(used.run, used.args.model_validate(intent.arguments), intent, self.ctx)
            self.ran += 1
            drift = compare(intent, then.observation, now, self.run_dir, self.folders)
            if drift is not None:
                return self._stop(drift)
        obs = then.observation
        return InnerReply(obs.status == "ok", recorded_text(obs, self.run_dir), obs.status, then.end, then.submission)

    def _stop(self, drift: Drift) -> InnerReply:
        self.drift = self.drift or drift
        return InnerReply(False, f"Not run: {drift.what}.", "rejected", end="the world differs from the parent's")

    def files_before(self) -> str | None:
        return None  # the program runs from its start, in a world as the parent's before it

    def record_files(self, files: str) -> None:
        pass  # the program's account is checked as its observation, not kept


def run_again(run_tool, args, intent: ToolIntent | InnerIntent, ctx: ToolContext) -> tuple[str, int | None, str]:
    """(status, exit code, text) of one write run again, as the dispatcher would have judged its result."""
    ctx = replace(ctx, idempotency_key=intent.idempotency_key, call_id=intent.call_id, step=intent.step)
    try:
        result = run_tool(args, ctx)
    except SandboxDead as e:
        return "error", None, f"The sandbox is gone: {e}"
    except TimeoutError as e:
        return "timeout", None, f"{intent.tool} timed out: {e}"
    except Exception as e:
        return "error", None, f"{intent.tool} failed with {type(e).__name__}: {e}"
    result = ToolResult(result) if isinstance(result, str) else result
    return ("timeout" if result.timed_out else "ok" if result.ok else "error"), result.exit_code, str(result.text)


def compare(
    intent: ToolIntent | InnerIntent,
    o: Observation,
    now: tuple[str, int | None, str],
    run_dir: Path,
    folders: Sequence[str],
) -> Drift | None:
    status, exit_code, text = now
    if (status, exit_code) != (o.status, o.exit_code):
        what = f"it ended {status} (exit {exit_code}), where the parent's ended {o.status} (exit {o.exit_code})"
        return Drift(intent.step, intent.call_id, intent.tool, what, differences(recorded_text(o, run_dir), text))
    if o.error_kind in ("tool_raised", "sandbox_dead", "timeout"):
        return None  # their texts say what went wrong in that process, not what the world holds
    diff = differences(recorded_text(o, run_dir), text, folders, (f"parent {intent.call_id}", "fork"))
    if diff:
        return Drift(intent.step, intent.call_id, intent.tool, "its output differs from the parent's", diff)
    return None


def recorded_text(o: Observation, run_dir: Path) -> str:
    """What the tool gave, whole: a cut observation's full text is in the artifact the fork inherited."""
    if o.truncation is not None and o.truncation.artifact and (run_dir / o.truncation.artifact).is_file():
        return (run_dir / o.truncation.artifact).read_text(encoding="utf-8", errors="replace")
    return o.text
