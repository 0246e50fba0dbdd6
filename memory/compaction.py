"""Compaction: when the prompt grows past a threshold, fold old steps into the working memory.

`compact` returns a `CompactionResult` whatever happens — the summariser may be
cut off by its token cap, reply with invalid JSON, or fail outright — so the
loop can journal it and carry on. A cut-off is never silent: it is recorded,
and compaction retries with a doubled cap, then by folding only the older half
of the steps (keeping more verbatim).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.context_policy import Compact, tokens
from core.memory_types import Fold, WorkingMemory, merged
from core.types import Message, Usage
from memory.folds import delta_text, full_text, head_len, notes_at, render_folds
from memory.summariser import (
    Summariser,
    SummaryRequest,
    describe_failure,
    fork_request,
    fresh_request,
    parse_memory,
    repair_request,
)
from memory.tokens import TokenCounter


class Attempt(BaseModel):
    model_config = ConfigDict(frozen=True)
    cap: int
    steps: tuple[int, int]
    finish_reason: str
    problem: str | None = None  # why this attempt's memory was not used
    repair: bool = False  # the one repair attempt after invalid output


class CompactionResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    ok: bool
    trigger: Literal["tokens", "every_steps", "overflow"]
    tokens_before: int
    tokens_after: int
    fold: Fold | None = None
    usage: Usage = Usage()
    finish_reason: str = ""  # of the summariser reply that was used (or the last one)
    cut_off: bool = False  # some summariser reply hit its token cap
    attempts: list[Attempt] = Field(default_factory=list)
    message: str = ""


def step_starts(history: Sequence[Message], start: int = 0) -> list[int]:
    return [i for i in range(start, len(history)) if history[i].role == "assistant"]


def due(
    cfg: Compact, prompt_tokens: int, step: int, last_fold_step: int, window: int | None = None
) -> Literal["tokens", "every_steps"] | None:
    """`window`: the model's context window, which a trigger given as a share of it ("80%") is a share of."""
    if prompt_tokens >= tokens(cfg.trigger_tokens, window):
        return "tokens"
    if cfg.every_steps is not None and step - last_fold_step >= cfg.every_steps:
        return "every_steps"
    return None


def kept_first(history: Sequence[Message], budget: int, counter: TokenCounter) -> int:
    """The end of the earliest whole steps after the head that fit in `budget` tokens."""
    end, used = head_len(history), 0
    starts = step_starts(history, end)
    for begin, after in zip(starts, [*starts[1:], len(history)]):
        used += sum(counter.count(m) for m in history[begin:after])
        if used > budget:
            break
        end = after
    return end


def fold_span(history: Sequence[Message], start: int, keep_recent: int) -> tuple[int, int] | None:
    """History indices [start, upto) to fold: every step from `start` except the newest `keep_recent`."""
    starts = step_starts(history, start)
    if len(starts) <= keep_recent:
        return None
    return start, starts[-keep_recent] if keep_recent else len(history)


def steps_of(history: Sequence[Message], start: int, upto: int) -> tuple[int, int]:
    before = sum(1 for m in history[:start] if m.role == "assistant")
    inside = sum(1 for m in history[start:upto] if m.role == "assistant")
    return before + 1, before + inside


def first_memory(history: Sequence[Message]) -> WorkingMemory:
    task = next((m.text for m in history[: head_len(history)] if m.role == "user"), "")
    return WorkingMemory(goal=task[:500])


def compact(
    history: Sequence[Message],
    folds: Sequence[Fold],
    cfg: Compact,
    prompt: Sequence[Message],
    counter: TokenCounter,
    summariser: Summariser,
    trigger: Literal["tokens", "every_steps", "overflow"],
    tools: Sequence = (),
    window: int | None = None,
    memory_text: str | None = None,
) -> CompactionResult:
    """`window`: the model's context window, for the budgets given as a share of it; `memory_text`: the agent's
    memory as the fold leaves it (memory.notes.run_note), which the fold keeps."""
    before = counter.prompt_tokens(prompt)
    usage, finish = Usage(), ""
    attempts: list[Attempt] = []

    def result(fold: Fold | None, message: str) -> CompactionResult:
        return CompactionResult(
            ok=fold is not None,
            trigger=trigger,
            tokens_before=before,
            tokens_after=counter.prompt_tokens(render_folds(history, [*folds, fold])) if fold else before,
            fold=fold,
            usage=usage,
            finish_reason=finish,
            cut_off=any(a.finish_reason == "length" for a in attempts),
            attempts=attempts,
            message=message,
        )

    first = folds[-1].upto if folds else kept_first(history, tokens(cfg.keep_first_tokens, window), counter)
    span = fold_span(history, first, cfg.keep_recent_steps)
    if span is None:
        return result(None, f"Nothing to fold: at most {cfg.keep_recent_steps} unfolded steps (keep_recent_steps).")
    start, upto = span
    previous = folds[-1].memory if folds else first_memory(history)
    starts = step_starts(history, start)
    older_half = starts[len(starts) // 2] if len(starts) > 1 else upto
    # (token cap, fold up to): as planned; with twice the cap; then fold only the older half.
    plans = [(cfg.summary_max_tokens, upto), (cfg.summary_max_tokens * 2, upto)]
    if older_half < upto:
        plans.append((cfg.summary_max_tokens * 2, older_half))
    at = len(step_starts(history))
    for cap, end in plans:
        steps = steps_of(history, start, end)
        if cfg.summariser_prompt == "fork":
            request = fork_request(prompt, previous, steps)
        else:
            request = fresh_request(previous, history[start:end], steps)
        fork_tools = tools if cfg.summariser_prompt == "fork" else ()
        req = SummaryRequest(request, previous, list(history[start:end]), cap, fork_tools, steps, at, len(attempts))
        memory, used, finish, tried = _ask(summariser, req, steps)
        usage = usage + used
        attempts.extend(tried)
        if memory is not None:
            memory = merged(previous, memory, steps[1])
            fold = _make_fold(history, folds, cfg, counter, previous, memory, end, steps, window)
            made = {"at_step": at, "start": start, "memory_text": memory_text}
            return result(fold.model_copy(update=made), _warning(attempts))
        if attempts and attempts[-1].finish_reason != "length":
            break  # invalid even after the repair attempt: a bigger cap will not help
    return result(None, _failure(attempts))


def _ask(summariser: Summariser, req: SummaryRequest, steps: tuple[int, int]):
    """One summariser call plus, on invalid output, one repair attempt."""
    usage, attempts = Usage(), []
    try:
        reply = summariser.summarise(req)
    except Exception as e:  # a failing summariser must not end the run: the history simply stays
        return (
            None,
            usage,
            "error",
            [Attempt(cap=req.cap, steps=steps, finish_reason="error", problem=describe_failure(e))],
        )
    usage = usage + reply.usage
    if reply.finish_reason == "length":
        return (
            None,
            usage,
            "length",
            [Attempt(cap=req.cap, steps=steps, finish_reason="length", problem="cut off by its token cap")],
        )
    memory, problem = parse_memory(reply.message.text)
    attempts.append(Attempt(cap=req.cap, steps=steps, finish_reason=reply.finish_reason, problem=problem))
    if memory is not None:
        return memory, usage, reply.finish_reason, attempts
    fixed = dataclasses.replace(
        req, messages=repair_request(req.messages, reply, problem or ""), attempt=req.attempt + 1
    )
    try:
        reply = summariser.summarise(fixed)
    except Exception as e:
        attempts.append(
            Attempt(cap=req.cap, steps=steps, finish_reason="error", problem=describe_failure(e), repair=True)
        )
        return None, usage, "error", attempts
    usage = usage + reply.usage
    memory, problem = (
        (None, "cut off by its token cap") if reply.finish_reason == "length" else parse_memory(reply.message.text)
    )
    attempts.append(Attempt(cap=req.cap, steps=steps, finish_reason=reply.finish_reason, problem=problem, repair=True))
    return memory, usage, reply.finish_reason, attempts


def _make_fold(
    history,
    folds,
    cfg: Compact,
    counter: TokenCounter,
    previous: WorkingMemory,
    memory: WorkingMemory,
    upto: int,
    steps: tuple[int, int],
    window: int | None,
) -> Fold:
    version = len(folds) + 1
    restart = cfg.layout == "rewrite" or not folds
    if not restart:
        text = delta_text(previous, memory, version, steps)
        notes = render_folds(history, folds)[notes_at(history, folds) :]
        notes_tokens = sum(
            counter.count(m) for m in notes if m.role == "user" and m.text.startswith("[Working memory v")
        )
        # The notes outgrew their budget: one rewrite, the only time this layout moves the prefix.
        restart = notes_tokens + len(counter.text_ids(text)) > tokens(cfg.max_memory_tokens, window)
    if restart:
        all_steps = (folds[0].first_step if folds else steps[0], steps[1])  # steps kept first are not in it
        text = full_text(memory, version, all_steps)
    return Fold(
        version=version, upto=upto, first_step=steps[0], last_step=steps[1], memory=memory, text=text, restart=restart
    )


def _failure(attempts: list[Attempt]) -> str:
    why = attempts[-1].problem if attempts else "no attempt was made"
    return f"Compaction failed ({why}); the history stays as it was. {_warning(attempts)}".strip()


def _warning(attempts: list[Attempt]) -> str:
    cut = [a for a in attempts if a.finish_reason == "length"]
    if not cut:
        return ""
    return (
        f"The summariser was cut off by its token cap {len(cut)} time(s) (caps {', '.join(str(a.cap) for a in cut)}); "
        "retried with a larger cap or fewer steps folded."
    )
