"""Text with its volatile parts made constant, so that two tool results that differ only by
where or when they happened compare equal: line numbers, timestamps, memory addresses,
durations, temporary paths and process ids. The repeat stop rule and the report's detectors
compare calls and results through this one function."""

from __future__ import annotations

import re

# Order matters: timestamps before bare times and durations, paths before line numbers in them.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # 2026-12-01T14:27:48.123Z, 2026-12-01 14:27:48+00:00
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),  # 14:27:48
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0x<addr>"),
    # /tmp/tmpab12cd/x.py, /var/folders/..., pytest's /tmp/pytest-of-root/pytest-3/test_x0
    (re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders)(?:/[^\s:'\"]+)?"), "<tmp>"),
    # bash: line 4:, File "x.py", line 12, at line 3
    (re.compile(r"\b(line|Line|LINE) \d+"), r"\1 <n>"),
    (re.compile(r"(\.\w{1,5}):\d+(?::\d+)?\b"), r"\1:<n>"),  # app.py:12:5 (file:line:column)
    # 0.53s, 1m20s, 12 ms, 3.2 seconds (a lone s or m only right after the number)
    (re.compile(r"\b\d+(?:\.\d+)?(?:m\d+(?:\.\d+)?s|s|m|ms|us|µs|ns)\b"), "<duration>"),
    (re.compile(r"\b\d+(?:\.\d+)? (?:ms|sec|secs|seconds?|min|mins|minutes?)\b"), "<duration>"),
    (re.compile(r"\b(pid|PID|process|Process)([ =:#]+)\d+\b"), r"\1\2<pid>"),
    (re.compile(r"^\[\d+\]\s+\d+$", re.MULTILINE), "[<job>] <pid>"),  # bash job start: [1] 12345
)


def normalise(text: str) -> str:
    """`text` with each volatile part replaced by a fixed placeholder; a pure function."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
