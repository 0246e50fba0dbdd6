"""The run directory: run.json, an fsynced append-only events.jsonl, artifacts, summary.json.

The layout is a contract (see runs/README.md): reports, resume, replay and A/B
comparisons read these files and never need the process that wrote them.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.errors import HarnessError
from core.events import EVENT, Event

HARNESS_VERSION = "0.1.0"


class RunInfo(BaseModel):
    run_id: str
    task: dict[str, Any]
    model: str
    sandbox: str  # local, docker, none (a chess game), or a custom factory's kind
    image: str | None = None  # docker: the image the run started from
    workdir: str | None = None  # docker: where its commands start
    env: dict[str, str] = Field(default_factory=dict)  # docker: variables set over the sandbox's defaults
    toolset: str = "standard"  # the named tool set (tools.builtin.TOOLSETS) the MCP tools joined
    tools: list[dict[str, str]] = Field(default_factory=list)  # offered: name, server, effect, schema_sha256
    policy: dict[str, Any]
    harness_version: str = HARNESS_VERSION
    seed: int | None = None
    started_at: str


def new_run_id(label: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:32] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{slug}-{secrets.token_hex(2)}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Temp file, fsync, rename: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Journal:
    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self.artifacts = run_dir / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self._file = open(run_dir / "events.jsonl", "a", encoding="utf-8")
        _lock(self._file, run_dir)
        self.seq = _last_seq(run_dir / "events.jsonl")
        if self._file.tell() > 0 and not _ends_with_newline(run_dir / "events.jsonl"):
            self._file.write("\n")  # a crash tore the last line: new events start on a line of their own
        self.listeners: list[Callable[[Event], None]] = []

    @classmethod
    def create(cls, out_dir: Path, info: RunInfo) -> Journal:
        run_dir = Path(out_dir) / info.run_id
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise HarnessError(f"Run directory {run_dir} already exists; pick another --out or run id.") from None
        except OSError as e:
            raise HarnessError(f"Cannot create run directory {run_dir}: {e.strerror}.") from None
        write_json_atomic(run_dir / "run.json", info.model_dump(mode="json"))
        return cls(run_dir)

    def append(self, event: Event) -> Event:
        self.seq += 1
        event = event.model_copy(update={"seq": self.seq, "ts": time.time()})
        self._file.write(event.model_dump_json() + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        for listener in self.listeners:
            listener(event)
        return event

    def store_artifact(self, name: str, text: str) -> str:
        """Save a large payload beside the journal; return its path relative to the run dir."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        path = self.artifacts / safe
        path.write_text(text, encoding="utf-8", errors="replace")
        return str(path.relative_to(self.dir))

    def write_summary(self, summary: BaseModel) -> None:
        write_json_atomic(self.dir / "summary.json", summary.model_dump(mode="json"))

    def close(self) -> None:
        self._file.close()


def read_events(run_dir: Path, on_bad_line: Callable[[int, str], None] | None = None) -> list[Event]:
    """Parse events.jsonl; a line that does not parse (a crash mid-write) is reported and skipped."""
    events: list[Event] = []
    path = Path(run_dir) / "events.jsonl"
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                events.append(EVENT.validate_json(line))
            except ValidationError as e:
                if on_bad_line is not None:
                    on_bad_line(lineno, str(e).splitlines()[0])
    return events


def _lock(file, run_dir: Path) -> None:
    """One writer per journal: a resume or an approval must not append beside a live run.
    The kernel drops the lock when its process dies, kill -9 included."""
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise HarnessError(
            f"Run {run_dir.name} is in use: another process is writing its journal (the run itself, or a resume). "
            "Wait until it stops, or stop it, then try again."
        ) from None


def _last_seq(path: Path) -> int:
    """The seq of the last event that parses, read from the end: a reopened journal continues after it."""
    if not path.exists():
        return 0
    for line in reversed(path.read_bytes().splitlines()):
        try:
            return EVENT.validate_json(line).seq
        except ValidationError:
            continue  # a torn or corrupt line; read_events reports it
    return 0


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_run_info(run_dir: Path) -> RunInfo:
    path = Path(run_dir) / "run.json"
    try:
        return RunInfo.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise HarnessError(f"{run_dir} is not a run directory: it has no run.json.") from None
