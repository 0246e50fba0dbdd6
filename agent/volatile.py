"""Text that differs between two runs of the same command although nothing that matters changed:
clock times and dates, durations, line numbers in tracebacks, long hex ids, temporary paths and
the run's own folder. Replaced by placeholders before a replay compares tool outputs."""

from __future__ import annotations

import re
from collections.abc import Sequence

DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "<datetime>"),
    (re.compile(rf"\b{DAY}\s+{MONTH}\s+\d{{1,2}}\s+\d{{1,2}}:\d{{2}}:\d{{2}}\s+\w+\s+\d{{4}}\b"), "<datetime>"),  # date
    (re.compile(rf"\b{MONTH}\s+\d{{1,2}}\s+(?:\d{{1,2}}:\d{{2}}(?::\d{{2}})?|\d{{4}})\b"), "<date>"),  # ls -l
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds)\b"), "<duration>"),
    (re.compile(r"\bline \d+\b"), "line <n>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"/tmp/[\w.-]+"), "<tmp>"),
]


def normalise(text: str, folders: Sequence[str] = ()) -> str:
    """`folders`: paths that differ by design (the recorded and the replayed run folders)."""
    for folder in sorted(folders, key=len, reverse=True):
        text = text.replace(folder, "<run>")
    for pattern, placeholder in PATTERNS:
        text = pattern.sub(placeholder, text)
    return text
