"""The run directory: run.json, an fsynced append-only events.jsonl, artifacts, summary.json.

Every line of events.jsonl is one event with its seq and a checksum, so a reader tells a
line torn by a crash mid-write (skipped: nothing was lost) from a damaged one (an event
that was written is gone: resume stops and names the line; `--repair` cuts there).

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent.journal.artifact_names import artifact_name
from agent.journal.lines import decode, encode, has_checksum
from agent.journal.repair import cut_writes
from agent.models.pricing import Price
from core.errors import HarnessError, describe_validation_error
from core.events import Event
from core.memory_entries import MemoryStart
from core.text_files import read_text_file

HARNESS_VERSION = "0.1.0"


class ForkOrigin(BaseModel):
    """Where a fork (`harness fork`) branched: its parent run and the step after which it goes its own way."""

    parent: str  # the parent's run id
    parent_dir: str  # the parent's run directory, absolute
    at_step: int  # the fork's journal begins with the parent's steps 1..at_step
    inherited: int  # events inherited from the parent, the first of the fork's journal
    # The fork's context policy differs from the parent's: the context at the branch is folded again under it.
    reshape: bool = False
    changes: list[str] = Field(default_factory=list)  # what the fork changed: policy, model, seed


class RunInfo(BaseModel):
    run_id: str
    task: dict[str, Any]
    model: str
    sandbox: str  # local, docker, none (a chess game), or a custom factory's kind
    image: str | None = None  # docker: the image the run started from
    workdir: str | None = None  # docker: where its commands start
    env: dict[str, str] = Field(default_factory=dict)  # docker: variables set over the sandbox's defaults
    sandbox_options: dict[str, Any] = Field(default_factory=dict)  # docker: DockerOptions set over the defaults
    toolset: str = "standard"  # the named tool set (tools.builtin.TOOLSETS) the MCP tools joined
    tools: list[dict[str, str]] = Field(default_factory=list)  # offered: name, server, effect, schema_sha256
    policy: dict[str, Any]
    harness_version: str = HARNESS_VERSION
    seed: int | None = None
    context_window: int | None = None  # tokens the run assumed its model holds (agent.models.windows); None: unknown
    started_at: str
    price: Price | None = None  # the model's price each call was priced at; None: unknown, or an older run
    # A run imported from another harness's file (`harness import`): the source (format, file, sha256, agent,
    # model, tools) and what that format does not carry, so no reader takes a missing figure for a measured one.
    imported: dict[str, Any] | None = None
    imported_gaps: list[str] = Field(default_factory=list)
    memory: MemoryStart | None = None  # the memory the run started from; None: it kept none (no memory tool)
    fork: ForkOrigin | None = None  # a fork: its parent and branch point; None: a run of its own
    # The MCP prompt (SERVER:NAME, its arguments) the task is made from as the run opens (`task` holds the task made
    # once the run has opened): a run stopped before that makes it again when it begins again
    mcp_prompt: tuple[str, dict[str, str]] | None = None


def new_run_id(label: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:32] or "run"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{slug}-{secrets.token_hex(2)}"


def make_folder(path: Path, what: str, exist_ok: bool = False) -> Path:
    """Create an output folder (a run directory, a batch folder), or say plainly why it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except FileExistsError:
        raise HarnessError(f"The {what} {path} already exists; pick another --out or run id.") from None
    except OSError as e:
        raise _cannot_make(path, what, e.strerror or str(e)) from None
    return path


def refuse_unmakeable(path: Path, what: str) -> None:
    """make_folder's refusal, made before anything is: the nearest existing folder above must be writable."""
    above = path
    while not above.exists() and above.parent != above:
        above = above.parent
    if above == path:
        return
    if not above.is_dir():
        raise _cannot_make(path, what, f"{above} is not a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        raise _cannot_make(path, what, f"{above} cannot be written")


def _cannot_make(path: Path, what: str, why: str) -> HarnessError:
    return HarnessError(f"Cannot create the {what} {path}: {why}; pick another --out.")


def write_json_atomic(path: Path, data: Any) -> None:
    """Temp file, fsync, rename: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise unwritable(path, e) from None


def unwritable(path: Path, err: OSError, run_dir: Path | None = None) -> HarnessError:
    return HarnessError(
        f"Cannot write {path}: {err.strerror or err}. The run stops here; free space or make its folder writable, "
        f"then continue it with `harness resume {run_dir or path.parent}`."
    )


class Journal:
    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self.path = run_dir / "events.jsonl"
        self.artifacts = run_dir / "artifacts"
        try:
            self.artifacts.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab", buffering=0)  # unbuffered: a failed write leaves nothing queued
        except OSError as e:
            raise unwritable(self.path, e) from None
        _lock(self._file, run_dir)
        self.seq = _last_seq(self.path)
        if self._file.tell() > 0 and not _ends_with_newline(self.path):
            self._write(b"\n")  # a crash tore the last line: new events start on a line of their own
        self.listeners: list[Callable[[Event], None]] = []

    @classmethod
    def create(cls, out_dir: Path, info: RunInfo) -> Journal:
        run_dir = make_folder(Path(out_dir) / info.run_id, "run directory")
        write_json_atomic(run_dir / "run.json", info.model_dump(mode="json"))
        return cls(run_dir)

    def append(self, event: Event) -> Event:
        event = event.model_copy(update={"seq": self.seq + 1, "ts": time.time()})
        self._write(encode(event))
        self.seq += 1
        for listener in self.listeners:
            listener(event)
        return event

    def tell(self, event: Event) -> None:
        """Tell the listeners of something passing (a call's progress) without writing it."""
        event = event.model_copy(update={"seq": self.seq, "ts": time.time()})
        for listener in self.listeners:
            listener(event)

    def extend(self, events: Iterable[Event]) -> list[Event]:
        """Append many events in one write and one fsync, for a journal written whole (an imported run):
        each keeps its own `ts` (when the source recorded the step), or gets now."""
        now, seq = time.time(), self.seq
        out = []
        for event in events:
            seq += 1
            out.append(event.model_copy(update={"seq": seq, "ts": event.ts or now}))
        self._write(b"".join(encode(e) for e in out))
        self.seq = seq
        for event in out:
            for listener in self.listeners:
                listener(event)
        return out

    def _write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view) :]
            os.fsync(self._file.fileno())
        except OSError as e:
            raise unwritable(self.path, e) from None

    def repair(self) -> str | None:
        """Cut the journal after its last good event before a damaged line, keeping the cut part
        beside it as events.jsonl.damaged-N; None when nothing is damaged."""
        found = scan(self.dir)
        if found.damage is None:
            return None
        data = self.path.read_bytes()
        backup = next(
            p for n in range(1, 10_000) if not (p := self.path.with_name(f"events.jsonl.damaged-{n}")).exists()
        )
        try:
            with open(backup, "xb") as f:
                f.write(data[found.keep_bytes :])
                os.fsync(f.fileno())
            os.truncate(self.path, found.keep_bytes)
            os.fsync(self._file.fileno())
        except OSError as e:
            raise unwritable(backup, e) from None
        self.seq = found.events[found.kept - 1].seq if found.kept else 0
        kept = data[: found.keep_bytes].count(b"\n")
        return (
            f"{found.damage.why}; events.jsonl was cut after line {kept}, its last good event (seq {self.seq}); "
            f"the {len(data) - found.keep_bytes} bytes cut are kept in {backup.name}"
            + cut_writes(data[found.keep_bytes :])
        )

    def store_artifact(self, name: str, text: str) -> str:
        """Save a large payload beside the journal; return its path relative to the run dir."""
        path = self.artifacts / artifact_name(name)
        try:
            path.write_text(text, encoding="utf-8", errors="replace")
        except OSError as e:
            raise unwritable(path, e, self.dir) from None
        return str(path.relative_to(self.dir))

    def write_summary(self, summary: BaseModel) -> None:
        write_json_atomic(self.dir / "summary.json", summary.model_dump(mode="json"))

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class BadLine:
    lineno: int
    why: str
    torn: bool = False  # cut short mid-write (no checksum at its end, not whole JSON), not damaged after it was written


@dataclass
class Scan:
    """events.jsonl read and checked. A line cut short by a crash mid-write is `skipped`: the
    journal reopened after it gave the next event the same seq, so no event is missing. A
    `damage` is a line (or a gap) where an event that was written is lost: the events after it
    cannot be trusted to rebuild the run. A last line that was written whole (it ends in its checksum)
    but does not match it is damage too; a torn last line is not: its event was never written."""

    events: list[Event] = field(default_factory=list)  # every good event, in order
    skipped: list[BadLine] = field(default_factory=list)
    damage: BadLine | None = None  # the first one
    keep_bytes: int = 0  # where the last good event before the damage ends
    kept: int = 0  # how many good events come before the damage
    last_line: int = 0  # the line of the last good event: bad lines after it are the journal's tail

    @property
    def tail(self) -> list[BadLine]:
        """Bad lines after the last good event: a torn last write, or a damaged end."""
        return [b for b in self.skipped if b.lineno > self.last_line]


def scan(run_dir: Path) -> Scan:
    out = Scan()
    pending: list[BadLine] = []  # bad lines since the last good event: torn writes unless an event is missing
    offset = 0
    path = Path(run_dir) / "events.jsonl"
    if not path.is_file():
        raise HarnessError(
            f"{run_dir} is not a whole run directory: it has run.json but no events.jsonl (the process died "
            f"before its first event, or the file was removed). `harness resume {run_dir}` starts it from the "
            "beginning; a copy of the run needs its events.jsonl too."
        )
    checked = False  # a line with a checksum was read: every later one has one
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            offset += len(line)
            if not line.strip():
                continue
            try:
                event = decode(line, checked)
            except ValueError as e:
                pending.append(bad_line(lineno, line, e))
                continue
            expected = out.events[-1].seq + 1 if out.events else 1
            if event.seq != expected and out.damage is None:
                if pending and pending[0].torn:  # not a torn write the journal went on after: its event is lost
                    pending[0] = BadLine(pending[0].lineno, f"line {pending[0].lineno} is damaged: it is not JSON")
                out.damage = (
                    pending[0]
                    if pending
                    else BadLine(
                        lineno,
                        (
                            f"{_seqs(expected, event.seq - 1)} missing before line {lineno}"
                            if event.seq > expected
                            else f"line {lineno} repeats seq {event.seq} (the journal was written twice?)"
                        ),
                    )
                )
            elif out.damage is None:
                out.keep_bytes, out.kept = offset, out.kept + 1
            out.skipped += pending
            pending = []
            out.events.append(event)
            out.last_line = lineno
            checked = checked or has_checksum(line)
    written = [b for b in pending if not b.torn]
    if written and out.damage is None:
        out.damage = written[0]
    out.skipped += pending
    return out


def bad_line(lineno: int, line: bytes, err: ValueError) -> BadLine:
    """What is wrong with a line that is not an event, in words a person can act on."""
    if not isinstance(err, ValidationError):
        return BadLine(lineno, f"line {lineno} is damaged: {err}")  # a checksum mismatch: decode says so
    first = err.errors()[0]
    if first["type"] == "json_invalid":
        if not has_checksum(line):
            return BadLine(lineno, f"line {lineno} is torn (cut short mid-write)", torn=True)
        return BadLine(lineno, f"line {lineno} is damaged: it is not JSON ({first['msg']}), yet it ends in a checksum")
    return BadLine(lineno, f"line {lineno} is damaged: it is not an event this version knows ({first['msg'][:120]})")


def _seqs(first: int, last: int) -> str:
    return f"event seq {first} is" if first == last else f"events seq {first} to {last} are"


def read_events(run_dir: Path, on_bad_line: Callable[[int, str], None] | None = None) -> list[Event]:
    """Every good event of events.jsonl; each line that is not one is reported and skipped."""
    found = scan(run_dir)
    if on_bad_line is not None:
        for bad in sorted(found.skipped, key=lambda b: b.lineno):
            on_bad_line(bad.lineno, bad.why)
    return found.events


def damage_error(run_dir: Path, found: Scan) -> HarnessError:
    assert found.damage is not None
    return HarnessError(
        f"{run_dir}/events.jsonl is damaged: {found.damage.why}. The events after it cannot be trusted to rebuild "
        f"the run, so it is not resumed. `harness resume {run_dir} --repair` cuts the journal after its last good "
        "event (keeping the cut part as events.jsonl.damaged-N) and resumes from there."
    )


def in_use(run_dir: Path) -> bool:
    """Whether a process holds the run's journal (the run itself, or a resume): probed with a shared lock taken
    and given back at once, which fails only while the writer's exclusive one is held."""
    try:
        with open(Path(run_dir) / "events.jsonl", "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True
    return False


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
    """The seq of the last good event, read from the end: a reopened journal continues after it."""
    for line in reversed(path.read_bytes().split(b"\n")):
        try:
            return decode(line).seq
        except ValueError:
            continue  # a torn or corrupt line; scan reports it
    return 0


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_run_info(run_dir: Path) -> RunInfo:
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise HarnessError(f"{run_dir} is not a run directory: it has no run.json.")
    try:
        return RunInfo.model_validate_json(read_text_file(path, "run record"))
    except ValidationError as e:
        raise HarnessError(describe_validation_error(e, f"The run record {path}")) from None
