"""What reports read of a run's journal: the shared step fold (agent.journal.fold), and the few
figures a report derives from a compaction event."""

from __future__ import annotations

import json

from agent.journal.fold import Step, fold
from core.events import Compacted, ContextOverflowed, Event

CUT_REASONS = {"length", "max_tokens", "max_output_tokens", "truncated"}  # finish reasons of a reply cut off


def steps_of(events: list[Event]) -> list[Step]:
    return fold(events).steps


def memory_text(c: Compacted) -> str:
    """The working memory a compaction produced, as sorted JSON ("" when it produced none)."""
    if c.fold is None:
        return ""
    return json.dumps(c.fold.memory.model_dump(mode="json"), indent=1, sort_keys=True, ensure_ascii=False)


def lost(o: ContextOverflowed) -> str:
    """What one overflow recovery dropped, in a sentence: the report's "what was lost"."""
    window = f"the model's window of {o.window:,} tokens" if o.window is not None else "the model's window"
    why = "the provider refused it as too long" if o.source == "provider" else f"over {window}"
    head = f"The prompt ({o.tokens:,} tokens, {o.reply_tokens:,} kept for the reply) did not fit ({why}): "
    if o.fold is not None:
        f = o.fold
        what = f"steps {f.first_step}–{f.last_step} folded into working memory v{f.version}"
    elif o.cuts:
        what = "; ".join(
            f"the output of {c.tool or 'a tool'} ({c.call_id}) cut from {c.tokens_before:,} to {c.tokens_after:,} "
            f"tokens (full text: {c.artifact})"
            for c in o.cuts
        )
    else:
        return head + f"{o.action} found nothing to drop. {o.message}".strip()
    return head + f"{what}, {o.dropped_tokens:,} tokens dropped."


def cut_off(c: Compacted) -> bool:
    """The summariser hit its token cap (on a retried attempt, or on the one kept)."""
    return c.cut_off or c.finish_reason in CUT_REASONS
