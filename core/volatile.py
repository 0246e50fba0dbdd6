"""Text with its volatile parts made constant, so that two tool results that differ only by
where or when they happened compare equal: line numbers, timestamps, memory addresses,
durations, temporary paths and process ids. The repeat stop rule and the report's detectors
compare calls and results through this one function, and so does replay when it tells the world
changing from the harness changing."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# Order matters: timestamps before bare times and durations, paths before line numbers in them.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # 2026-12-01T14:27:48.123Z, 2026-12-01 14:27:48+00:00
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"), "<time>"),
    (
        re.compile(rf"\b{_DAY}\s+{_MONTH}\s+\d{{1,2}}\s+\d{{1,2}}:\d{{2}}:\d{{2}}\s+\w+\s+\d{{4}}\b"),
        "<time>",
    ),  # date(1)
    (re.compile(rf"\b{_MONTH}\s+\d{{1,2}}\s+(?:\d{{1,2}}:\d{{2}}(?::\d{{2}})?|\d{{4}})\b"), "<date>"),  # ls -l
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),  # 14:27:48
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0x<addr>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),  # container and commit ids
    # /tmp/tmpab12cd/x.py, /var/folders/..., pytest's /tmp/pytest-of-root/pytest-3/test_x0
    (re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders)(?:/[^\s:'\"]+)?"), "<tmp>"),
    # bash: line 4:, File "x.py", line 12, at line 3
    (re.compile(r"\b(line|Line|LINE) \d+"), r"\1 <n>"),
    (re.compile(r"(\.\w{1,5}):\d+(?::\d+)?\b"), r"\1:<n>"),  # app.py:12:5 (file:line:column)
    # 0.53s, 1m20s, 12 ms, 3.2 seconds (a lone s or m only right after the number)
    (re.compile(r"\b\d+(?:\.\d+)?(?:m\d+(?:\.\d+)?s|s|m|ms|us|µs|ns)\b"), "<duration>"),
    (re.compile(r"\b\d+(?:\.\d+)? (?:s|ms|us|µs|ns|sec|secs|seconds?|min|mins|minutes?)\b"), "<duration>"),
    (re.compile(r"\b(pid|PID|process|Process)([ =:#]+)\d+\b"), r"\1\2<pid>"),
    (re.compile(r"^\[\d+\]\s+\d+$", re.MULTILINE), "[<job>] <pid>"),  # bash job start: [1] 12345
)


def normalise(text: str, folders: Sequence[str] = ()) -> str:
    """`text` with each volatile part replaced by a fixed placeholder; a pure function.
    `folders`: paths that differ by design (a recorded run's folder and its replay's)."""
    for folder in sorted(folders, key=len, reverse=True):
        text = text.replace(folder, "<run>")
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def differences(old: str, new: str, folders: Sequence[str] = (), names: tuple[str, str] = ("recorded", "now")) -> str:
    """A unified diff of two texts once each is normalised: empty exactly when they compare equal."""
    a = normalise(old, folders).splitlines(keepends=True)
    b = normalise(new, folders).splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=names[0], tofile=names[1])
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
