"""Two batch folders compared file by file, apart from timings and run ids."""

from __future__ import annotations

import json
from pathlib import Path

# Fields that hold times (or ids made from times), a line's checksum (it covers its time) and a
# container's id (Docker makes one per container); everything else must be equal.
TIMING = {
    "ts",
    "wall_s",
    "started_at",
    "written_at",
    "latency_s",
    "duration_s",
    "game_time_s",
    "reply_time_s",
    "run_id",
    "crc",
    "container_id",
}


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def content(path: Path):
    """A file's content for comparison: JSON (and JSON lines) without timing fields, other text as it is."""
    text = path.read_text()
    if path.suffix == ".json":
        return without_timings(json.loads(text))
    if path.suffix == ".jsonl":
        return [without_timings(json.loads(line)) for line in text.splitlines()]
    return text


def same_run(a: Path, b: Path) -> None:
    assert files(a) == files(b)
    for name in files(a):
        if (a / name).is_file():
            assert content(a / name) == content(b / name), name
