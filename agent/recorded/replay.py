"""Replay a recorded run, separating the harness from the world.

By default nothing runs: the recorded model replies are fed back, and every tool call the
harness makes gets the output its tool recorded (`playback`). Every prompt the harness renders
(its digest, size and message count), every write intent, observation, harness message and
compaction it journals, and the stop it reaches must then be byte-identical to the recording:
any difference is a harness divergence, and `harness replay` fails.

With `execute`, the tools run again in a fresh sandbox prepared from the task's files and
setup. Where a tool's output differs from the recording once volatile text (times, durations,
ids, the run folder) is normalised, the world changed: that is reported, never failed.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent.branch import branch
from agent.fork import place
from agent.journal.integrity import RunCheck, check_run, damaged, torn_tail
from agent.journal.store import Journal, RunInfo, in_use, read_events, read_run_info
from agent.journal.summary import Summary
from agent.journal.tools import PROGRAM_TOOLS, recorded_tools
from agent.mcp_context import placed_in
from agent.memory_store import MemorySource, recorded_clock, recorded_start
from agent.recorded.compare import Divergence, compare_harness, compare_world
from agent.recorded.lives import LifeEnded, count, ends_at_once, replay_lives, through_lives
from agent.recorded.playback import PlaybackModel, playback, world_stops
from agent.recovery.approval import decisions
from agent.recovery.branch import writes_upto
from agent.reopen import Reopening
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, SandboxFactory, SandboxSpec, open_sandbox, recorded_sandbox
from core.errors import HarnessError
from core.events import (
    Event,
    InnerObserved,
    ModelReplied,
    ProgramFiles,
    ResourceUpdated,
    RunStopped,
    SummaryReplied,
    ToolObserved,
)
from core.policy import HarnessPolicy
from memory.summariser import RecordedSummariser
from tools.base import Registry, recorded_tool
from tools.builtin import toolset
from tools.code_mode.tool import NAME as RUN_CODE


@dataclass
class ReplayReport:
    replay_dir: Path
    executed: bool  # the tools ran again (`execute`), else their recorded outputs were played back
    prompts: int  # model requests compared
    observations: int  # tool observations compared
    harness: list[Divergence] = field(default_factory=list)  # the harness built something else: a failure
    world: list[Divergence] = field(default_factory=list)  # a tool's output changed (execute only): information
    recorded_stop: str = "unfinished"
    replayed_stop: str = ""
    notes: list[str] = field(default_factory=list)  # what the check of the recording found (agent.journal.integrity)


def replay(
    run_dir: Path,
    out: Path | None = None,
    tools: Registry | None = None,
    sandbox: SandboxFactory | None = None,
    execute: bool = False,
) -> ReplayReport:
    """Re-drive the loop of `run_dir` with its recorded replies; the replay's own run lands under `out`."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    if in_use(run_dir):
        raise HarnessError(
            f"Run {run_dir.name} is in use: a process is still writing its journal (the run itself, or a resume), "
            "so it has no end to replay yet. Replay it once that process stops."
        )
    check = check_run(run_dir, info)
    if check.damage is not None or check.torn is not None:
        raise unreplayable(run_dir, check)
    recorded = check.events
    task, policy = Task.model_validate(info.task), HarnessPolicy.model_validate(info.policy)
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="harness-replay-"))
    model = PlaybackModel(recorded, info)
    # The memory tool runs again (it acts on the harness's own store, not the world), from the recorded run's
    # starting ledger and dating its entries at the recorded times: its store must come out byte for byte.
    memory = (
        MemorySource(start=recorded_start(run_dir, info.memory), clock=recorded_clock(recorded))
        if info.memory is not None
        else None
    )
    if info.fork is not None:
        forked, replay_dir, notes = fork_again(run_dir, info, recorded, out_dir, tools, sandbox, execute)
        return report(run_dir, replay_dir, recorded, forked, execute, check.notes + notes)
    if execute:
        box = sandbox if sandbox is not None else recorded_sandbox(info, "replay with --execute")
        spec = RunSpec(
            task,
            model,
            policy,
            out_dir,
            sandbox=box,
            toolset=info.toolset,
            tools=tools,
            run_id=_replay_id(info),
            seed=info.seed,
            memory=memory,
        )
    else:  # no tool runs, nor the task's setup: the local sandbox only answers the loop's liveness probe
        base, policy = as_offered(run_dir, info, policy, tools)
        spec = RunSpec(
            task.model_copy(update={"check": None, "resources": [], "setup": []}),
            model,
            policy,
            out_dir,
            tools=playback(base, recorded, run_dir, policy, checking(run_dir, base)),
            run_id=_replay_id(info),
            seed=info.seed,
            stop_rules=(world_stops(recorded),),
            memory=memory,
            placed=placed_in(
                recorded, task, [*HarnessPolicy.model_validate(info.policy).mcp_resources, *task.resources]
            ),
            updates=updates_as_recorded(recorded),
        )
    summary, replay_dir, notes = replay_lives(recorded, spec)
    return report(run_dir, replay_dir, recorded, summary, execute, check.notes + notes)


def as_offered(
    run_dir: Path, info: RunInfo, policy: HarnessPolicy, tools: Registry | None
) -> tuple[Registry, HarnessPolicy]:
    """The tools exactly as the run offered them (and its programs could call), and the policy without its MCP
    servers, which need not start (the resources they placed come from the recording); a run recorded before tool
    sets were kept gets its named tool set."""
    offered = recorded_tools(run_dir)
    if offered is None:
        return (tools if tools is not None else toolset(info.toolset)), policy
    names = {r.name for r in offered}
    inner = [r for r in recorded_tools(run_dir, PROGRAM_TOOLS) or () if r.name not in names]  # programs'
    played = policy.model_copy(update={"mcp": [], "mcp_resources": []})
    return Registry.of(recorded_tool(r) for r in [*offered, *inner]), played


def updates_as_recorded(recorded: Sequence[Event]) -> deque[ResourceUpdated]:
    """The placed resources' updates as the run journaled them, which the replay appends at the same steps."""
    return deque(e for e in recorded if isinstance(e, ResourceUpdated))


def checking(run_dir: Path, base: Registry) -> set[str]:
    """The tools that could look at the world after a crash (`Tool.already_done`), as the run recorded them: a
    replay of its resumed run settles a cut-short call of theirs as that run did."""
    offered = recorded_tools(run_dir)
    if offered is None:
        return {t.name for t in base if t.already_done is not None}
    return {r.name for r in [*offered, *(recorded_tools(run_dir, PROGRAM_TOOLS) or ())] if r.checks}


def report(
    run_dir: Path, replay_dir: Path, recorded: Sequence[Event], summary: Summary | None, execute: bool, notes: list[str]
) -> ReplayReport:
    """The replay's journal compared with the recording's (`summary`: None where the replay's last life ended early)."""
    replayed = read_events(replay_dir)
    stops = [e for e in recorded if isinstance(e, RunStopped)]
    folders = [str(run_dir.resolve()), str(replay_dir.resolve())]
    return ReplayReport(
        replay_dir=replay_dir,
        executed=execute,
        prompts=min(_count(recorded, ModelReplied), _count(replayed, ModelReplied)),
        observations=min(_count(recorded, ToolObserved), _count(replayed, ToolObserved)),
        harness=[] if execute else compare_harness(recorded, replayed),
        world=compare_world(recorded, replayed, folders) if execute else [],
        recorded_stop=stops[-1].reason if stops else "unfinished",
        replayed_stop=summary.stop_reason if summary is not None else "unfinished",
        notes=notes,
    )


def fork_again(
    run_dir: Path,
    info: RunInfo,
    recorded: Sequence[Event],
    out: Path,
    tools: Registry | None,
    sandbox: SandboxFactory | None,
    execute: bool,
) -> tuple[Summary | None, Path, list[str]]:
    """A fork replays as a fork of the same inherited events: its branch built again (its world from the parent's
    writes, played back or, with `execute`, run), then its own steps from its recorded replies, through the lives
    of its own part (a fork stopped and resumed is replayed stopping and resuming there)."""
    assert info.fork is not None
    inherited, own = recorded[: info.fork.inherited], recorded[info.fork.inherited :]
    policy = HarnessPolicy.model_validate(info.policy)
    again = info.model_copy(update={"run_id": _replay_id(info)})
    factory, programs_with, updates = sandbox, None, None
    if not execute:  # the parent's writes and the fork's calls answered from the recording; nothing runs
        again = again.model_copy(update={"task": {**info.task, "check": None, "setup": []}})
        base, policy = as_offered(run_dir, info, policy, tools)
        again = again.model_copy(update={"policy": policy.model_dump(mode="json")})
        done = [(i, seen) for i, seen in writes_upto(inherited, 0, info.fork.at_step) if seen.observation.executed]
        programs = {i.call_id for i, _ in done if i.tool == RUN_CODE}  # each played back with its calls
        inner = [e for e in inherited if isinstance(e, InnerObserved | ProgramFiles) and program_of(e) in programs]
        played = playback(
            with_parents_run_code(base, info.fork.parent_dir) if programs else base,
            [*(seen for _, seen in done), *inner, *own],
            run_dir,
            policy,
            checking(run_dir, base),
        )
        tools = Registry.of((t for t in played if t.name in base.tools), world=played.world)
        programs_with = played.get(RUN_CODE)
        factory = sandbox or (lambda workspace: open_sandbox(SandboxSpec(), workspace))
        updates = updates_as_recorded(own)
    replay_dir = place(out, again, inherited, run_dir)
    model, summariser, clock = (
        PlaybackModel(own, info),
        RecordedSummariser(e for e in own if isinstance(e, SummaryReplied)),
        recorded_clock(own),
    )
    stops = () if execute else (world_stops(recorded),)

    def first(listeners: Sequence[Callable[[Event], None]], whole: bool) -> Summary:
        if not whole and ends_at_once(own):
            raise LifeEnded()  # its process stopped before the branch wrote anything: the resume builds it
        journal = Journal(replay_dir)
        journal.listeners.extend(listeners)
        try:
            summary, _ = branch(
                replay_dir,
                again,
                journal,
                model,
                read_events(replay_dir),
                Reopening(tools, factory, stops, summariser, clock, updates, programs_with),
                decisions(recorded) if whole else {},
            )
        finally:
            journal.close()
        return summary

    def resumed(listeners: Sequence[Callable[[Event], None]]) -> Summary | None:
        return resume(
            replay_dir,
            model=model,
            tools=tools,
            sandbox=factory,
            listeners=listeners,
            stop_rules=stops,
            summariser=summariser,
            clock=clock,
            updates=updates,
            programs=programs_with,  # a branch that a later life builds plays the parent's programs back too
        ).summary

    summary, notes = through_lives(own, replay_dir, first, resumed, already=count(inherited))
    return summary, replay_dir, notes


def program_of(e: InnerObserved | ProgramFiles) -> str:
    return e.parent if isinstance(e, InnerObserved) else e.call_id


def with_parents_run_code(base: Registry, parent_dir: str) -> Registry:
    """`base` with the parent's run_code as it recorded it, where the fork offers none (a fork in calls mode of a
    run in code mode): the parent's programs are played back with it to rebuild the world, never offered."""
    if base.get(RUN_CODE) is not None:
        return base
    found = [r for r in recorded_tools(Path(parent_dir)) or () if r.name == RUN_CODE]
    return Registry.of([*base, *(recorded_tool(r) for r in found)], world=base.world)


def unreplayable(run_dir: Path, check: RunCheck) -> HarnessError:
    """A recording that is not whole: a replay would report its missing end or lost event as divergences."""
    if check.damage is not None:
        return HarnessError(
            f"{run_dir}/{damaged(check.damage)}. An event that was written is lost there, so "
            f"the recording cannot be replayed. `harness resume {run_dir} --repair` cuts the journal after its last "
            "good event (keeping the cut part as events.jsonl.damaged-N) and finishes the run from there; that run "
            "can be replayed."
        )
    assert check.torn is not None
    return HarnessError(
        f"{run_dir}/{torn_tail(check.torn)}, so the recording stops in the middle of a step and cannot be "
        f"replayed. `harness resume {run_dir}` finishes "
        "the run (it skips the torn line; no recorded event is lost); that run can be replayed."
    )


def _count(events: Sequence[Event], kind: type) -> int:
    return sum(isinstance(e, kind) for e in events)


def _replay_id(info: RunInfo) -> str:
    return f"{info.run_id}-replay-{datetime.now(UTC).strftime('%H%M%S%f')}"
