"""Head+tail truncation of tool output, applied when an observation is created.

The middle of a long output is usually the least informative part (the start
says what ran, the end says how it ended), so we keep both ends and say exactly
how much was cut and where the full text lives.
"""

from __future__ import annotations

from core.context_policy import Limits


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
