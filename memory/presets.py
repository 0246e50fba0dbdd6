"""Named context policies, so runs and re-renders can be compared by name.

The numbers are starting points for 100k-token-class models; pass a policy
file to vary them.
"""

from __future__ import annotations

from memory.context import Compact, ContextStep, DiscloseTools, MaskObservations, StripReasoning

CONTEXT_PRESETS: dict[str, tuple[str, list[ContextStep]]] = {
    "append_only": ("every message resent verbatim: the cache's best case, the context's worst", []),
    "masked": (
        "past reasoning stripped, all but the last 5 tool outputs replaced by placeholders",
        [StripReasoning(keep="last_turn"), MaskObservations(keep_last=5)],
    ),
    "masked_batched": (
        "as `masked`, but the mask moves 10 outputs at a time, so the prompt is append-only in between",
        [StripReasoning(keep="all"), MaskObservations(keep_last=5, every=10)],
    ),
    "compact_naive": (
        "at 12k tokens, a fresh summary of all but the last 4 steps rewrites the history",
        [Compact(trigger_tokens=12000, keep_recent_steps=4, layout="rewrite", summariser_prompt="fresh")],
    ),
    "compact_cache_aware": (
        "at 12k tokens, fold all but the last 2 steps; memory changes are appended, the prefix never moves",
        [Compact(trigger_tokens=12000, keep_recent_steps=2, layout="append", summariser_prompt="fork")],
    ),
    "disclosed": ("tool summaries in every request, full schemas through describe_tool", [DiscloseTools()]),
}
