"""Per-game figures read back from a run's journal: mistakes, tool use, tokens, characters, time.

Everything here is derived from `events.jsonl` and `run.json`, so it can be
recomputed for any finished run. Prompt characters are recounted by replaying
the history through the run's own context policy (rendering is pure), and they
include reasoning and tool-call arguments: the loop's `prompt_chars` counts only
visible text, which would hide what reasoning stripping saves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.journal.fold import fold
from core.context_policy import ContextStep
from core.events import Event
from core.types import Message
from memory.render import Renderer

# Observations that mean the model's action could not even be read as a tool call.
UNREADABLE = {"bad_json", "unknown_tool", "invalid_args"}
BOARD_TOOLS = {"get_board", "get_legal_moves"}


@dataclass
class JournalFigures:
    replies: int = 0
    moves: int = 0  # legal moves the agent played
    wrong_moves: int = 0  # illegal, invalid or ambiguous make_move
    wrong_actions: int = 0  # a reply without a tool call, or a call that could not be read
    extra_moves_rejected: int = 0  # make_move calls after the first write of a reply
    rejected_calls: int = 0  # any call rejected that way
    tool_calls: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    reasoning_chars: int = 0
    board_observation_chars: int = 0
    prompt_chars: int = 0  # summed over every prompt sent, reasoning and call arguments included
    reply_time_s: float = 0.0


def message_chars(m: Message) -> int:
    reasoning = len(m.reasoning.text) if m.reasoning is not None else 0
    calls = sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
    return len(m.text) + reasoning + calls


def prompt_chars(history: Sequence[Message], renderer: Renderer) -> int:
    return sum(message_chars(m) for m in renderer.render(history))


def journal_figures(events: Iterable[Event], context: Sequence[ContextStep]) -> JournalFigures:
    f = JournalFigures()
    tools: Counter[str] = Counter()
    run = fold(events)
    renderer = Renderer(context)  # one per game: each prompt costs what changed since the last
    previous_ts = run.started_ts
    for step in run.steps:
        if step.replied is not None:
            reply = step.replied.reply
            f.replies += 1
            f.prompt_chars += prompt_chars(run.history[: step.history_at], renderer)
            u = reply.usage
            f.prompt_tokens += u.prompt_tokens
            f.completion_tokens += u.completion_tokens
            f.cached_tokens += u.cached_tokens
            f.reasoning_tokens += u.reasoning_tokens
            f.reasoning_chars += len(reply.message.reasoning.text) if reply.message.reasoning else 0
            f.wrong_actions += not reply.message.tool_calls
            # A client that times itself says so; otherwise the gap since the previous step
            # is the model call (rendering a prompt takes microseconds).
            waited = step.replied.ts - previous_ts if previous_ts is not None else 0.0
            f.reply_time_s += reply.latency_s or waited
        for o in step.observations:
            tools[o.tool] += 1
            if o.tool in BOARD_TOOLS and o.status == "ok":
                f.board_observation_chars += len(o.text)
            if o.tool == "make_move" and o.status == "ok":
                f.moves += 1
            if o.tool == "make_move" and o.error_kind == "domain":
                f.wrong_moves += 1
            if o.error_kind in UNREADABLE:
                f.wrong_actions += 1
            if o.status == "rejected":
                f.rejected_calls += 1
                f.extra_moves_rejected += o.tool == "make_move"
        previous_ts = step.last_ts if step.last_ts is not None else previous_ts
    f.tool_calls = dict(sorted(tools.items()))
    f.reply_time_s = round(f.reply_time_s, 3)
    return f
