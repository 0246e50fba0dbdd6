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

import difflib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.branch import branch
from agent.fork import place
from agent.journal.integrity import RunCheck, check_run, damaged, torn_tail
from agent.journal.store import Journal, RunInfo, in_use, read_events, read_run_info
from agent.journal.summary import Summary
from agent.journal.tools import PROGRAM_TOOLS, recorded_tools
from agent.memory_store import MemorySource, recorded_clock, recorded_start
from agent.recorded.lives import replay_lives
from agent.recorded.playback import PlaybackModel, playback, world_stops
from agent.recovery.approval import decisions
from agent.recovery.branch import writes_upto
from agent.run.task import Task
from agent.session import RunSpec, SandboxFactory, SandboxSpec, open_sandbox, recorded_sandbox
from core.errors import HarnessError
from core.events import (
    Compacted,
    ContextOverflowed,
    Event,
    InnerIntent,
    InnerObserved,
    MemoryWritten,
    MessageAdded,
    ModelReplied,
    ProgramFiles,
    RunStopped,
    SummaryReplied,
    ToolIntent,
    ToolObserved,
)
from core.policy import HarnessPolicy
from core.types import Observation
from core.volatile import differences, normalise
from memory.summariser import RecordedSummariser
from tools.base import Registry, recorded_tool
from tools.builtin import toolset
from tools.code_mode.tool import NAME as RUN_CODE


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # one line
    diff: str = ""  # unified diff, recorded -> replayed
    call_id: str = ""
    tool: str = ""


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
        forked, replay_dir = fork_again(run_dir, info, recorded, out_dir, tools, sandbox, execute)
        return report(run_dir, replay_dir, recorded, forked, execute, check.notes)
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
    else:  # no tool runs: the local sandbox only answers the loop's liveness probe
        base, policy = as_offered(run_dir, info, policy, tools)
        spec = RunSpec(
            task.model_copy(update={"check": None}),
            model,
            policy,
            out_dir,
            tools=playback(base, recorded, run_dir, policy, checking(run_dir, base)),
            run_id=_replay_id(info),
            seed=info.seed,
            stop_rules=(world_stops(recorded),),
            memory=memory,
        )
    summary, replay_dir, notes = replay_lives(recorded, spec)
    return report(run_dir, replay_dir, recorded, summary, execute, check.notes + notes)


def as_offered(
    run_dir: Path, info: RunInfo, policy: HarnessPolicy, tools: Registry | None
) -> tuple[Registry, HarnessPolicy]:
    """The tools exactly as the run offered them (and its programs could call), and the policy without its MCP
    servers, which need not start; a run recorded before tool sets were kept gets its named tool set."""
    offered = recorded_tools(run_dir)
    if offered is None:
        return (tools if tools is not None else toolset(info.toolset)), policy
    names = {r.name for r in offered}
    inner = [r for r in recorded_tools(run_dir, PROGRAM_TOOLS) or () if r.name not in names]  # programs'
    return Registry.of(recorded_tool(r) for r in [*offered, *inner]), policy.model_copy(update={"mcp": []})


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
) -> tuple[Summary, Path]:
    """A fork replays as a fork of the same inherited events: its branch built again (its world from the parent's
    writes, played back or, with `execute`, run), then its own steps from its recorded replies."""
    assert info.fork is not None
    inherited, own = recorded[: info.fork.inherited], recorded[info.fork.inherited :]
    policy = HarnessPolicy.model_validate(info.policy)
    again = info.model_copy(update={"run_id": _replay_id(info)})
    factory, programs_with = sandbox, None
    if not execute:  # the parent's writes and the fork's calls answered from the recording; nothing runs
        again = again.model_copy(update={"task": {**info.task, "check": None}})
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
    replay_dir = place(out, again, inherited, run_dir)
    journal = Journal(replay_dir)
    try:
        summary, _ = branch(
            replay_dir,
            again,
            journal,
            PlaybackModel(own, info),
            read_events(replay_dir),
            tools,
            factory,
            () if execute else (world_stops(recorded),),
            decisions(recorded),
            RecordedSummariser(e for e in own if isinstance(e, SummaryReplied)),
            programs_with,
            recorded_clock(own),
        )
    finally:
        journal.close()
    return summary, replay_dir


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


def compare_harness(recorded: Sequence[Event], replayed: Sequence[Event]) -> list[Divergence]:
    """Everything the harness produced, recorded against replayed, in order, kind by kind."""
    out: list[Divergence] = []
    for kind, what in HARNESS_RECORDS.items():
        out += _compare(
            [e for e in recorded if isinstance(e, kind)], [e for e in replayed if isinstance(e, kind)], what
        )
    old, new = ([e for e in events if isinstance(e, RunStopped)][-1:] for events in (recorded, replayed))
    out += _compare(old, new, lambda e: {"reason": e.reason, "outcome": e.outcome})
    return sorted(out, key=lambda d: d.step)


def _prompt(e: ModelReplied) -> dict:
    figures = {
        "messages": e.prompt_messages,
        "chars": e.prompt_chars,
        "counted_tokens": e.counted_tokens,
        "prefix_reused": e.prefix_reused,
    }
    return figures | ({"sha256": e.prompt_sha256} if e.prompt_sha256 is not None else {})  # older journals lack it


def _observation(e: ToolObserved | InnerObserved) -> dict:
    o = e.observation.model_dump(mode="json", exclude={"duration_s"})
    # Only the first line: in older journals a traceback tail naming that process's files followed.
    if e.observation.error_kind == "tool_raised":
        o["text"] = e.observation.text.split("\n", 1)[0]
    return o | {"submission": e.submission, "rejects_later": e.rejects_later if isinstance(e, ToolObserved) else None}


def _inner(e: InnerObserved) -> dict:
    return _observation(e) | {"parent": e.parent, "arguments": e.arguments, "end": e.end}


def _compaction(e: Compacted) -> dict:
    # The summariser's usage and attempts are the model's doing; the fold and its effect are the harness's.
    return e.model_dump(mode="json", include={"ok", "trigger", "version", "tokens_before", "tokens_after", "fold"})


def _overflow(e: ContextOverflowed) -> dict:
    # As a compaction's: the summariser's usage and attempts are the model's doing.
    return e.model_dump(mode="json", exclude={"seq", "ts", "summariser_usage", "attempts", "message"})


def memory_as_compared(e: MemoryWritten) -> dict:
    # An entry's id names the run that wrote it, and the replay is a run of its own: ids are compared without it.
    written = e.model_dump(mode="json", exclude={"seq", "ts"})
    for entry in written["entries"]:
        own = entry.pop("run_id") + "/"
        entry["id"] = entry["id"].removeprefix(own)
        entry["supersedes"] = entry["supersedes"] and entry["supersedes"].removeprefix(own)
    return written


HARNESS_RECORDS: dict[type, Callable[[Any], dict]] = {
    ModelReplied: _prompt,
    ToolIntent: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    ToolObserved: _observation,
    InnerIntent: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    InnerObserved: _inner,
    ProgramFiles: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    MessageAdded: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    MemoryWritten: memory_as_compared,
    Compacted: _compaction,
    ContextOverflowed: _overflow,
}


def _compare(recorded: Sequence[Event], replayed: Sequence[Event], what: Callable[[Any], dict]) -> list[Divergence]:
    out = []
    for old, new in zip(recorded, replayed, strict=False):  # the extras of either side are reported below
        a, b = what(old), what(new)
        b = {k: v for k, v in b.items() if k in a}  # a journal from before a figure existed is checked on the rest
        if old.step != new.step or a != b:
            out.append(
                Divergence(
                    old.step, f"{old.type} differs", _diff(a | {"step": old.step}, b | {"step": new.step}), *_call(old)
                )
            )
    for extra in recorded[len(replayed) :]:
        out.append(Divergence(extra.step, f"{extra.type} recorded, but the replay made none", "", *_call(extra)))
    for extra in replayed[len(recorded) :]:
        out.append(
            Divergence(extra.step, f"{extra.type} made by the replay, but the recording has none", "", *_call(extra))
        )
    return out


def _call(e: Event) -> tuple[str, str]:
    if isinstance(e, ToolObserved | InnerObserved):
        return e.observation.call_id, e.observation.tool
    if isinstance(e, ToolIntent | InnerIntent):
        return e.call_id, e.tool
    return "", ""


def _diff(a: dict, b: dict) -> str:
    old = json.dumps(a, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    new = json.dumps(b, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, fromfile="recorded", tofile="replayed")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def compare_world(recorded: Sequence[Event], replayed: Sequence[Event], folders: Sequence[str]) -> list[Divergence]:
    """Tool outputs that changed, once volatile text is normalised: the world, not the harness. A model's calls and
    its programs' calls are compared each in their order."""
    return _world(recorded, replayed, folders, ToolObserved) + _world(recorded, replayed, folders, InnerObserved)


def _world(
    recorded: Sequence[Event],
    replayed: Sequence[Event],
    folders: Sequence[str],
    kind: type[ToolObserved] | type[InnerObserved],
) -> list[Divergence]:
    out = []
    old: list[ToolObserved | InnerObserved] = [e for e in recorded if isinstance(e, kind)]
    new: list[ToolObserved | InnerObserved] = [e for e in replayed if isinstance(e, kind)]
    for x, y in zip(old, new, strict=False):  # the extras of either side are reported below
        a, b = x.observation, y.observation
        if (a.call_id, a.status) != (b.call_id, b.status) or normalise(a.text, folders) != normalise(b.text, folders):
            what = f"status {a.status} -> {b.status}" if a.status != b.status else "output changed"
            out.append(Divergence(x.step, what, _text_diff(a, b, folders), a.call_id, a.tool))
    for extra in old[len(new) :]:
        o = extra.observation
        out.append(Divergence(extra.step, "recorded, but the replay stopped before it", "", o.call_id, o.tool))
    for extra in new[len(old) :]:
        o = extra.observation
        out.append(Divergence(extra.step, "replayed, but the recording has no such observation", "", o.call_id, o.tool))
    return out


def _text_diff(a: Observation, b: Observation, folders: Sequence[str]) -> str:
    names = (f"recorded {a.call_id}", f"replayed {b.call_id}")
    return differences(f"[{a.status}]\n{a.text}", f"[{b.status}]\n{b.text}", folders, names)


def _count(events: Sequence[Event], kind: type) -> int:
    return sum(isinstance(e, kind) for e in events)


def _replay_id(info: RunInfo) -> str:
    return f"{info.run_id}-replay-{datetime.now(UTC).strftime('%H%M%S%f')}"
