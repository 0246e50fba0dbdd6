"""Claude Code's session transcripts: `~/.claude/projects/<project>/<session id>.jsonl`, one JSON object a line.

Lines of `type` `user` and `assistant` hold the conversation (`message`, as Anthropic's Messages API shapes it);
the rest (`progress`, `file-history-snapshot`, `queue-operation`, `summary`) are the CLI's own bookkeeping. One
API response is written as several `assistant` lines, one per content block (text, thinking, tool_use), sharing
`message.id` and `usage`: they are one reply here. Tool results come back in `user` lines as `tool_result`
blocks, linked by `tool_use_id`; a `user` line of text after the first reply is the person (or the CLI) speaking
between replies. A `system` line of subtype `compact_boundary` marks where Claude Code compacted the
conversation into a summary (the `user` line after it, `isCompactSummary`). A subagent's own file
(`<session>/subagents/agent-<id>.jsonl`) has only `isSidechain` lines; a session's file, whose sidechain lines
are its subagents' work, is read without them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.interop.imports.form import (
    BadTrajectory,
    Call,
    Compaction,
    Result,
    Trajectory,
    Turn,
    inferred_tools,
)
from evals.interop.imports.text import fields, iso_seconds, items, text_of
from evals.interop.imports.usage import anthropic_usage

CONVERSATION = ("user", "assistant")
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
FINISH |= {"refusal": "content_filter", "pause_turn": "other"}


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, list):
        return False
    lines = [d for d in doc if isinstance(d, dict)]
    return any(d.get("type") in CONVERSATION and "sessionId" in d and isinstance(d.get("message"), dict) for d in lines)


def read(doc: list[Any], path: Path) -> Iterator[Trajectory]:
    lines = [d for d in doc if isinstance(d, dict)]
    main = [d for d in lines if not d.get("isSidechain")]
    subagent = not any(d.get("type") in CONVERSATION for d in main)
    lines = lines if subagent else main
    reader = _Reader()
    for line in lines:
        reader.add(line)
    if not reader.replies:
        raise BadTrajectory("a Claude Code session with no assistant reply")
    turns = [r.done() for r in reader.replies]
    first = next((d for d in lines if d.get("type") in CONVERSATION), {})
    session = str(first.get("sessionId") or path.stem)
    agent_id = str(first.get("agentId") or "")
    stamps = [t for t in (iso_seconds(d.get("timestamp")) for d in lines) if t is not None]
    last = turns[-1]
    yield Trajectory(
        format="claude-code",
        format_version=str(first.get("version") or ""),
        instance_id=f"{session}-{agent_id}" if subagent and agent_id else session,
        agent="claude-code",
        agent_version=str(first.get("version") or ""),
        model=next((t.model for t in turns if t.model), ""),
        opening=tuple(("user", text) for text in reader.opening),
        turns=tuple(turns),
        tools=inferred_tools(turns),
        stop_reason="not_recorded",
        stop_message=(
            "A Claude Code session records no end of its own; its last reply ended with "
            f"{last.finish_reason} and the session waited for the person."
        ),
        started_ts=min(stamps) if stamps else None,
        wall_s=(max(stamps) - min(stamps)) if stamps else None,
        recorded={"replies": len(turns), "lines": len(doc)},
        gaps=_gaps(turns),
    )


class _Reply:
    """One API response, gathered from the lines that share its message id, and what answered it."""

    def __init__(self, message: dict[str, Any]):
        self.message = message
        self.blocks: list[dict[str, Any]] = []
        self.results: dict[str, Result] = {}
        self.notes: list[str] = []
        self.compaction: Compaction | None = None
        self.ts: float | None = None

    def add(self, line: dict[str, Any]) -> None:
        message = fields(line.get("message"))
        self.blocks += [b for b in items(message.get("content")) if isinstance(b, dict)]
        if message.get("stop_reason") or not self.message.get("stop_reason"):
            self.message = {**self.message, **{k: v for k, v in message.items() if v is not None}}
        self.ts = iso_seconds(line.get("timestamp")) or self.ts

    def done(self) -> Turn:
        calls = [
            Call(id=str(b.get("id")), name=str(b.get("name", "")), arguments=json.dumps(b.get("input") or {}))
            for b in self.blocks
            if b.get("type") == "tool_use"
        ]
        reason = str(self.message.get("stop_reason") or "")
        cost = self.message.get("costUSD")
        return Turn(
            text="\n".join(str(b.get("text", "")) for b in self.blocks if b.get("type") == "text"),
            reasoning="\n".join(str(b.get("thinking", "")) for b in self.blocks if b.get("type") == "thinking"),
            calls=tuple(calls),
            results=tuple(self.results[c.id] for c in calls if c.id in self.results),
            notes=tuple(self.notes),
            compaction=self.compaction,
            usage=anthropic_usage(self.message.get("usage")),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            model=str(self.message.get("model") or ""),
            finish_reason=FINISH.get(reason, "other") if reason else "stop",
            ts=self.ts,
        )


class _Reader:
    def __init__(self) -> None:
        self.opening: list[str] = []
        self.replies: list[_Reply] = []
        self.by_id: dict[str, _Reply] = {}
        self.calls: dict[str, _Reply] = {}  # tool_use id -> the reply that made the call

    def add(self, line: dict[str, Any]) -> None:
        kind = line.get("type")
        if kind == "assistant":
            self._assistant(line)
        elif kind == "user":
            self._user(line)
        elif kind == "system" and line.get("subtype") == "compact_boundary" and self.replies:
            meta = fields(line.get("compactMetadata"))
            tokens = meta.get("preTokens")
            self.replies[-1].compaction = Compaction(
                trigger=str(meta.get("trigger") or ""), tokens_before=tokens if isinstance(tokens, int) else 0
            )

    def _assistant(self, line: dict[str, Any]) -> None:
        message = fields(line.get("message"))
        if message.get("model") == "<synthetic>":  # the CLI's own words in the assistant's place (an API error)
            self._note(f"(Claude Code) {text_of(message.get('content'))}")
            return
        key = str(message.get("id") or line.get("uuid") or len(self.replies))
        reply = self.by_id.get(key)
        if reply is None:
            reply = self.by_id[key] = _Reply(message)
            self.replies.append(reply)
        reply.add(line)
        for block in reply.blocks:
            if block.get("type") == "tool_use":
                self.calls[str(block.get("id"))] = reply

    def _user(self, line: dict[str, Any]) -> None:
        content = fields(line.get("message")).get("content")
        texts = [content] if isinstance(content, str) else []
        for block in items(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._result(block)
            elif isinstance(block, dict):
                texts.append(text_of([block]))
        for text in texts:
            if not self.replies:
                self.opening.append(text)
            else:
                self._note(text)

    def _result(self, block: dict[str, Any]) -> None:
        call_id = str(block.get("tool_use_id"))
        reply = self.calls.get(call_id)
        text = text_of(block.get("content"))
        if reply is None:
            self._note(text)
            return
        failed = bool(block.get("is_error"))
        reply.results[call_id] = Result(
            call_id=call_id,
            text=text,
            status="error" if failed else "ok",
            error_kind="tool_error" if failed else None,
        )

    def _note(self, text: str) -> None:
        if self.replies:
            self.replies[-1].notes.append(text)
        else:
            self.opening.append(text)


def _gaps(turns: list[Turn]) -> tuple[str, ...]:
    gaps = [
        "the system prompt and tool schemas Claude Code sent: a session file does not keep them",
        "exit codes and durations of tool calls: a tool result says only whether it was an error",
        "thinking blocks' signatures and redacted thinking: only the thinking text is kept",
        "how the session ended: it stops where the person stopped",
    ]
    if any(t.cost_usd is None for t in turns):
        gaps.append("the cost of each reply: this version of Claude Code records none (repriced from the table)")
    return tuple(gaps)
