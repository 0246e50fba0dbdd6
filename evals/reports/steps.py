"""A run's journal folded into one record per step: what reports and detectors read.

The reader is tolerant on purpose. A line that does not parse (a crash mid-write) is
counted and skipped, and `compaction` events are read from their raw JSON so that
reports keep working while that event's exact shape settles (see `Compaction`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.events import EVENT, Event, MessageAdded, ModelFailed, ModelReplied, RunStopped, ToolIntent, ToolObserved
from agent.journal import RunInfo
from agent.summary import Summary, summarize
from core.types import Message, ModelReply, Observation, ToolCall, Usage

CUT_REASONS = {"length", "max_tokens", "max_output_tokens", "truncated"}  # finish reasons of a reply cut off


@dataclass(frozen=True)
class Compaction:
    """Old steps were folded into a working memory. Read from the raw event by several names,
    so a report keeps working while the event's shape evolves."""

    step: int  # the step after which it ran: the next step's prompt is the compacted one
    seq: int
    ok: bool  # False: compaction failed and the history stayed as it was
    tokens_before: int | None
    tokens_after: int | None
    memory: str  # the working memory as text (JSON when the event holds a structure)
    prompt_text: str  # what this compaction put into the prompt (the memory text when not recorded)
    folded: tuple[int, int] | None  # first and last step folded; None: all steps so far
    restart: bool  # its prompt text replaces every earlier compaction's text
    truncated: bool  # the summary was cut off (the summariser hit its token cap)
    finish_reason: str | None
    usage: Usage  # what the summariser call cost
    message: str
    raw: dict[str, Any]


@dataclass
class Step:
    n: int
    reply: ModelReply | None = None
    prompt_chars: int = 0
    prompt_messages: int = 0
    counted_tokens: int | None = None  # the harness's own count of the prompt, where the journal has it
    prefix_reused: int | None = None  # of those, the longest prefix shared with an earlier request
    observations: list[Observation] = field(default_factory=list)
    intents: list[ToolIntent] = field(default_factory=list)
    failures: list[ModelFailed] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    notes: list[Message] = field(default_factory=list)  # harness messages added in this step
    first_ts: float | None = None
    last_ts: float | None = None

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return self.reply.message.tool_calls if self.reply is not None else ()

    @property
    def usage(self) -> Usage:
        return self.reply.usage if self.reply is not None else Usage()


@dataclass
class RunLog:
    """The parsed events.jsonl of one run."""

    events: list[Event]
    compactions: list[Compaction]
    bad_lines: int = 0


def parse_compaction(data: dict[str, Any]) -> Compaction:
    fold = _dict(data.get("fold"))

    def pick(*names: str) -> Any:
        for source in (data, fold, _dict(data.get("usage"))):
            for name in names:
                if source.get(name) is not None:
                    return source[name]
        return None

    memory = pick("memory", "summary", "working_memory")
    memory_text = memory if isinstance(memory, str) else "" if memory is None else json.dumps(
        memory, indent=1, sort_keys=True, ensure_ascii=False)
    finish = pick("finish_reason", "stop_reason")
    truncated = bool(pick("cut_off", "truncated", "summary_truncated")) or str(finish) in CUT_REASONS
    first, last = _int(fold.get("first_step")), _int(fold.get("last_step"))
    usage = pick("summariser_usage", "summarizer_usage")
    try:
        usage = Usage.model_validate(usage) if isinstance(usage, dict) else Usage()
    except ValidationError:
        usage = Usage()
    return Compaction(
        step=int(data.get("step", 0)),
        seq=int(data.get("seq", 0)),
        ok=bool(data.get("ok", True)),
        tokens_before=_int(pick("tokens_before", "before_tokens", "prompt_tokens_before")),
        tokens_after=_int(pick("tokens_after", "after_tokens", "prompt_tokens_after")),
        memory=memory_text,
        prompt_text=str(fold.get("text") or data.get("text") or memory_text),
        folded=(first, last) if first is not None and last is not None else None,
        restart=bool(fold.get("restart", True)),
        truncated=truncated,
        finish_reason=None if finish in (None, "") else str(finish),
        usage=usage,
        message=str(data.get("message") or ""),
        raw=data,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def read_journal(run_dir: Path) -> RunLog:
    events: list[Event] = []
    compactions: list[Compaction] = []
    bad = 0
    with open(Path(run_dir) / "events.jsonl", encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if isinstance(data, dict) and data.get("type") == "compaction":
                    compactions.append(parse_compaction(data))  # one reading, whatever the event's version
                else:
                    events.append(EVENT.validate_python(data))
            except (ValueError, ValidationError, TypeError):
                bad += 1  # a half-written line, or an event type this version does not know
    return RunLog(events, compactions, bad)


def fold(events: list[Event], compactions: Sequence[Compaction] = ()) -> tuple[list[Message], list[Step]]:
    """(the messages before the first step, the steps in order)."""
    opening: list[Message] = []
    steps: dict[int, Step] = {}

    def at(n: int, ts: float) -> Step:
        step = steps.setdefault(n, Step(n))
        if ts:
            step.first_ts = ts if step.first_ts is None else min(step.first_ts, ts)
            step.last_ts = ts if step.last_ts is None else max(step.last_ts, ts)
        return step

    for e in events:
        if isinstance(e, MessageAdded):
            if e.step == 0:
                opening.append(e.message)
            else:
                at(e.step, e.ts).notes.append(e.message)
        elif isinstance(e, ModelReplied):
            step = at(e.step, e.ts)
            step.reply, step.prompt_chars, step.prompt_messages = e.reply, e.prompt_chars, e.prompt_messages
            # newer journals also hold the harness's own count and the ideal prefix reuse
            step.counted_tokens = getattr(e, "counted_tokens", None)
            step.prefix_reused = getattr(e, "prefix_reused", None)
        elif isinstance(e, ToolObserved):
            at(e.step, e.ts).observations.append(e.observation)
        elif isinstance(e, ToolIntent):
            at(e.step, e.ts).intents.append(e)
        elif isinstance(e, ModelFailed):
            at(e.step, e.ts).failures.append(e)
        elif isinstance(e, RunStopped) and e.step in steps:
            at(e.step, e.ts)
    for c in compactions:
        at(c.step, 0.0).compactions.append(c)
    return opening, [steps[n] for n in sorted(steps)]


def steps_of(events: list[Event], compactions: Sequence[Compaction] = ()) -> list[Step]:
    return fold(events, compactions)[1]


def load_summary(run_dir: Path, events: list[Event], info: RunInfo) -> Summary:
    """summary.json when the run wrote one; else the same figures derived from the journal."""
    path = Path(run_dir) / "summary.json"
    if path.exists():
        try:
            return Summary.model_validate_json(path.read_text())
        except ValidationError:
            pass  # an older or newer shape: derive it instead
    stamps = [e.ts for e in events if e.ts]
    return summarize(events, info, (max(stamps) - min(stamps)) if stamps else 0.0)


def stop_event(events: list[Event]) -> RunStopped | None:
    return next((e for e in reversed(events) if isinstance(e, RunStopped)), None)
