"""Head+tail truncation of tool output, applied when an observation is created.

The middle of a long output is usually the least informative part (the start
says what ran, the end says how it ended), so we keep both ends and say exactly
how much was cut and where the full text lives.
"""

from __future__ import annotations

from core.context_policy import Limits
from memory.tokens import TokenCounter


def notice(cut_chars: int, cut_lines: int, artifact: str | None) -> str:
    where = f" Full output: {artifact}." if artifact else ""
    return f"\n[... {cut_chars} characters ({cut_lines} lines) elided from the middle.{where} ...]\n"


def head_tail(text: str, limits: Limits, artifact: str | None = None) -> tuple[str, bool]:
    """Return (text to show, whether anything was cut).

    The head and tail are kept byte-for-byte; only the notice sits between them.
    """
    if len(text) <= limits.head_chars + limits.tail_chars:
        return text, False
    head = text[: limits.head_chars]
    tail = text[len(text) - limits.tail_chars :] if limits.tail_chars else ""
    middle = text[limits.head_chars : len(text) - limits.tail_chars]
    return head + notice(len(middle), middle.count("\n"), artifact) + tail, True


def cut_to_tokens(text: str, tokens: int, counter: TokenCounter, artifact: str | None = None) -> str:
    """`text` cut head+tail so that it, the notice included, is at most `tokens` tokens (as near as whole
    characters allow); unchanged when it fits. A binary search over the characters kept."""
    encode = counter.encode  # not text_ids: the candidates are thrown away, so they are not worth caching
    if len(encode(text)) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the most characters whose cut fits
        mid = (low + high + 1) // 2
        if len(encode(head_tail(text, Limits(head_chars=mid // 2, tail_chars=mid - mid // 2), artifact)[0])) <= tokens:
            low = mid
        else:
            high = mid - 1
    return head_tail(text, Limits(head_chars=low // 2, tail_chars=low - low // 2), artifact)[0]
