"""Playback: a recorded run's model and tools, answering as they did when it was recorded.

The recorded agent replies come back in order, and each tool answers its calls with its recorded outputs in
order, without running: so a replay exercises the harness alone, against the recording.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.journal.store import RunInfo
from agent.run.state import RunState
from agent.run.stopping import Stop, StopRule
from core.context_policy import Limits
from core.errors import PermanentModelError
from core.events import Event, InnerObserved, ModelReplied, ProgramFiles, RunStopped, ToolObserved
from core.policy import HarnessPolicy, ModelParams
from core.types import Message, ModelReply, Observation
from sandboxes.base import SandboxDead
from tools.base import Registry, Tool, ToolResult
from tools.code_mode.tool import NAME as RUN_CODE

# Stops that the world decides (a goal check, a dead sandbox, a game's end): a playback replays them where they happened.
WORLD_STOPS = ("goal_verified", "sandbox_dead", "game_over")


class PlaybackModel:
    """The recorded agent replies in order (the summariser gets its own: memory.summariser.RecordedSummariser)."""

    def __init__(self, recorded: Sequence[Event], info: RunInfo):
        self.name = info.model  # so the replay counts prompt tokens with the recorded run's tokenizer
        self.run_id = info.run_id
        self.replies = deque(e.reply for e in recorded if isinstance(e, ModelReplied))
        self.window = info.context_window

    def context_window(self, params: ModelParams) -> int | None:
        """The window the run recorded, so the replay checks prompts and sizes "80%" budgets as the run did."""
        return self.window

    def close(self) -> None:
        """Nothing to free: the replies are the journal's, in memory."""

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        if not self.replies:
            raise PermanentModelError(
                f"Replay of {self.run_id}: the recording has no more replies; the harness asked for one more."
            )
        return self.replies.popleft()


def playback(tools: Registry, recorded: Sequence[Event], run_dir: Path, policy: HarnessPolicy) -> Registry:
    """The same tools (names, schemas, effects), each answering with its recorded outputs in order, whether a
    model or a run_code program called it. run_code runs no program: it makes the recorded program's calls again
    through the harness (so they are dispatched and journaled anew), then answers with its recorded output."""
    queues: dict[str, deque[ToolObserved | InnerObserved]] = defaultdict(deque)
    for e in recorded:
        if isinstance(e, ToolObserved | InnerObserved) and e.observation.executed:
            queues[e.observation.tool].append(e)
    programs: dict[str, list[InnerObserved | ProgramFiles]] = defaultdict(list)  # by the run_code call's id
    for e in recorded:
        if isinstance(e, InnerObserved):
            programs[e.parent].append(e)
        elif isinstance(e, ProgramFiles):
            programs[e.call_id].append(e)

    def recorded_run(tool: Tool) -> Callable[[Any, Any], ToolResult]:
        def run_recorded(args: Any, ctx: Any) -> ToolResult:
            for made in programs[ctx.call_id] if tool.name == RUN_CODE and ctx.program is not None else ():
                if isinstance(made, ProgramFiles):
                    ctx.program.record_files((run_dir / made.artifact).read_text())
                else:
                    ctx.program.call(made.observation.tool, made.arguments)
            if not queues[tool.name]:
                return ToolResult(
                    f"The recording has no further result of {tool.name}: the harness ran it more often "
                    "than the recorded run did.",
                    ok=False,
                )
            e = queues[tool.name].popleft()
            return _as_result(e, _raw_text(e.observation, run_dir, policy.truncation.for_tool(tool.name)))

        return run_recorded

    return Registry.of(
        (replace(t, run=recorded_run(t), already_done=None, resumes=t.name == RUN_CODE) for t in tools),
        world=tools.world,
    )


def _as_result(e: ToolObserved | InnerObserved, text: str) -> ToolResult:
    """What the tool returned (or raised) when the recording made this observation."""
    o = e.observation
    if o.error_kind == "sandbox_dead":
        raise SandboxDead(text.removeprefix("The sandbox is gone: "))
    if o.error_kind == "tool_raised":  # "<tool> failed with <Type>: <message>" (older journals: a traceback tail after)
        first = text.split("\n", 1)[0]
        kind, _, message = first.removeprefix(f"{o.tool} failed with ").partition(": ")
        raise type(kind, (Exception,), {})(message)
    return ToolResult(
        text,
        ok=o.status == "ok",
        exit_code=o.exit_code,
        timed_out=o.status == "timeout",
        domain_error=o.error_kind == "domain",
        submission=e.submission,
        rejects_later=e.rejects_later if isinstance(e, ToolObserved) else e.end,
    )


def _raw_text(o: Observation, run_dir: Path, limits: Limits) -> str:
    """The tool's whole output: the observation's text, or the artifact a truncated one saved. When
    that artifact is gone (fixtures keep only the journal), a stand-in of the same size whose head
    and tail are the recorded ones, so the harness's truncation can still be checked."""
    if o.truncation is None:
        return o.text
    if o.truncation.artifact and (run_dir / o.truncation.artifact).is_file():
        return (run_dir / o.truncation.artifact).read_text(encoding="utf-8", errors="replace")
    head = o.text[: limits.head_chars]
    tail = o.text[len(o.text) - limits.tail_chars :] if limits.tail_chars else ""
    cut = o.truncation.original_chars - len(head) - len(tail)
    shown = o.text[len(head) : len(o.text) - len(tail)]
    lines = int(m.group(1)) if (m := re.search(r"characters \((\d+) lines\) elided", shown)) else 0
    return head + "\n" * lines + "x" * (cut - lines) + tail


def world_stops(recorded: Sequence[Event]) -> StopRule:
    """Stop where the recording stopped for a reason the world gave (its goal check passed, its sandbox died)."""
    stops = {e.step: e for e in recorded if isinstance(e, RunStopped) and e.reason in WORLD_STOPS}

    def rule(state: RunState, done: Any) -> Stop | None:
        e = stops.get(state.step)
        return Stop(e.reason, e.message, e.outcome) if e is not None else None

    return rule
