"""Playback: a recorded run's model and tools, answering as they did when it was recorded.

The recorded agent replies come back in order, and each tool call is answered with the output recorded for it,
without running: so a replay exercises the harness alone, against the recording.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.journal.store import RunInfo
from agent.run.state import RunState
from agent.run.stopping import Stop, StopRule
from core.context_policy import Limits
from core.errors import PermanentModelError
from core.events import (
    Event,
    InnerIntent,
    InnerObserved,
    InputRequested,
    ModelReplied,
    ProgramFiles,
    RunStopped,
    ToolIntent,
    ToolObserved,
)
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


def playback(
    tools: Registry, recorded: Sequence[Event], run_dir: Path, policy: HarnessPolicy, checked: Collection[str] = ()
) -> Registry:
    """The same tools (names, schemas, effects), each call answered with the result recorded for that very call
    (its step and id), whether a model or a run_code program made it: so a resumed run that settles a call its
    killed process left open, or runs it again, is answered as the recorded one was; for the tools that could
    check the world (`checked`: those with `already_done` in the recorded run), that check says what the resumed
    recorded run did with it. run_code runs no program: it makes the recorded program's calls again through the
    harness (so they are dispatched and journaled anew), then answers with its recorded output."""
    results: dict[tuple[int, str], deque[ToolObserved | InnerObserved]] = defaultdict(deque)
    intents = Counter((e.step, e.call_id) for e in recorded if isinstance(e, ToolIntent | InnerIntent))
    for e in recorded:
        if isinstance(e, ToolObserved | InnerObserved) and e.observation.executed:
            results[(e.step, e.observation.call_id)].append(e)
    programs: dict[str, list[InnerObserved | ProgramFiles]] = defaultdict(list)  # by the run_code call's id
    for e in recorded:
        if isinstance(e, InnerObserved):
            programs[e.parent].append(e)
        elif isinstance(e, ProgramFiles):
            programs[e.call_id].append(e)

    asked = questions_asked(recorded)

    def answer(tool: Tool, ctx: Any) -> ToolResult | None:
        again = next((batch for given, batch in asked[(ctx.step, ctx.call_id)] if given == len(ctx.inputs)), None)
        if again is not None:  # it asked these with as many answers given: the run stops for a person again
            return ToolResult("", ok=False, awaiting_input=again)
        found = results.get((ctx.step, ctx.call_id))
        if not found:
            return None
        e = found.popleft()
        return _as_result(e, _raw_text(e.observation, run_dir, policy.truncation.for_tool(tool.name)))

    def recorded_run(tool: Tool) -> Callable[[Any, Any], ToolResult]:
        def run_recorded(args: Any, ctx: Any) -> ToolResult:
            for made in programs[ctx.call_id] if tool.name == RUN_CODE and ctx.program is not None else ():
                if isinstance(made, ProgramFiles):  # a first run's scan (one run again after a crash keeps it)
                    if ctx.program.files_before() is None:
                        ctx.program.record_files((run_dir / made.artifact).read_text())
                else:
                    ctx.program.call(made.observation.tool, made.arguments)
            result = answer(tool, ctx)
            if result is None:
                return ToolResult(
                    f"The recording has no result of call {ctx.call_id} ({tool.name}) at step {ctx.step}: the "
                    "harness ran a call the recorded run did not.",
                    ok=False,
                )
            return result

        return run_recorded

    def found_in_place(tool: Tool) -> Callable[[Any, Any], ToolResult | None]:
        """For a write cut short, what the resumed recorded run did: ran it again (a second intent: None, not in
        place), took its effect as in place (one intent, then a result), or let the policy decide (raising, as a
        check that cannot look does)."""

        def done(args: Any, ctx: Any) -> ToolResult | None:
            if intents[(ctx.step, ctx.call_id)] > 1:
                return None
            result = answer(tool, ctx)
            if result is None:
                raise LookupError(f"the recording settled call {ctx.call_id} by its policy")
            return result

        return done

    return Registry.of(
        (
            replace(
                t,
                run=recorded_run(t),
                already_done=found_in_place(t) if t.name in checked else None,
                resumes=t.name == RUN_CODE,
            )
            for t in tools
        ),
        world=tools.world,
    )


def questions_asked(recorded: Sequence[Event]) -> dict[tuple[int, str], list[tuple[int, tuple[dict, ...]]]]:
    """Each time a call's tool asked a person questions (an MCP server's elicitation), by the call's step and id:
    how many of its questions had answers then, and the questions it asked (journaled together, one after another)."""
    out: dict[tuple[int, str], list[tuple[int, tuple[dict, ...]]]] = defaultdict(list)
    previous: Event | None = None
    for e in recorded:
        if isinstance(e, InputRequested):
            batches = out[(e.step, e.call_id)]
            if isinstance(previous, InputRequested) and previous.call_id == e.call_id:
                given, batch = batches[-1]
                batches[-1] = (given, (*batch, e.question))
            else:
                batches.append((sum(len(b) for _, b in batches), (e.question,)))
        previous = e
    return out


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
