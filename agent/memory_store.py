"""The run's memory: the store the `memory` tool works on (tools.builtin.memory.MemoryBackend).

It holds the ledger the run started from (empty, a kept store's, or a recording's) and every entry the run
writes. A call's changes are dated as entries (memory.ledger) and journaled as one `memory_written` event
before the call's observation, so resume and replay rebuild the store from the journal alone, byte for byte;
then the files are written under the run folder's memories/ for a person to read. A `MemorySource` says
what a new run starts from (`starting_ledger`); a resumed run starts from what the recording did.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.journal.store import Journal, read_run_info
from agent.memory_dir import MemoryDir, load, materialise, save
from core.errors import HarnessError
from core.events import Event, MemoryWritten
from core.memory_entries import MemoryChange, MemoryEntry, MemoryStart, Provenance, digest, files_of, ledger_lines
from memory.ledger import dated, written_on
from memory.notes import run_note
from tools.base import ToolContext

START = "memory_start.jsonl"  # the starting ledger, in the run's artifacts/


class MemoryStore:
    def __init__(
        self,
        start: Sequence[MemoryEntry],
        run_id: str,
        instance: str | None,
        journal: Journal,
        clock: Callable[[], float] = time.time,
        written: Iterable[MemoryWritten] = (),
        kept: MemoryDir | None = None,
    ):
        self.start = list(start)
        self.run_id, self.instance, self.journal, self.clock, self.kept = run_id, instance, journal, clock, kept
        self.ledger = list(start)
        self.replies: dict[str, str] = {}
        for w in written:
            self.ledger.extend(w.entries)
            self.replies[w.call_id] = w.reply
        # A fork's journal begins with its parent's steps: the entries written there are this run's own steps'.
        self.inherited = {e.run_id for e in self.ledger[len(self.start) :]} - {run_id}
        self._files = files_of(self.ledger)
        shutil.rmtree(self.folder, ignore_errors=True)  # a resumed run's folder is made again from the journal
        materialise(self.folder, self._files)

    @property
    def folder(self) -> Path:
        return self.journal.dir / "memories"

    def files(self) -> dict[str, str]:
        return self._files

    def commit(self, changes: Sequence[MemoryChange], said: Provenance, reply: str, ctx: ToolContext) -> None:
        entries = dated(self.ledger, changes, said, self.run_id, self.instance, ctx.step, self.clock(), ctx.call_id)
        self.journal.append(MemoryWritten(step=ctx.step, call_id=ctx.call_id, entries=entries, reply=reply))
        self.ledger.extend(entries)
        self.replies[ctx.call_id] = reply
        self._files = files_of(self.ledger)
        materialise(self.folder, self._files, {e.path for e in entries})

    def reply_of(self, call_id: str) -> str | None:
        return self.replies.get(call_id)

    def written(self) -> list[MemoryEntry]:
        """The entries this run wrote."""
        return self.ledger[len(self.start) :]

    def as_of(self, step: int, shown: int) -> str | None:
        """What a fold made after `step` keeps of the memory (memory.notes.run_note)."""
        return run_note(self.ledger, self.run_id, step, shown, self.inherited)

    def save(self) -> int:
        """Into the kept store, when it is writable: the entries it lacks (none the second time)."""
        return save(self.kept, self.ledger) if self.kept is not None else 0


@dataclass(frozen=True)
class MemorySource:
    """Where a run's memory comes from: a kept store (`--memory DIR`), a recorded ledger (a replay starts from
    its recording's), or neither (the run's own, starting empty). `clock` dates entries (a replay's gives the
    recorded times); `benchmark`: the run is scored on its task, so a store holding entries written while
    working on that same task is refused."""

    kept: MemoryDir | None = None
    start: Sequence[MemoryEntry] | None = None
    clock: Callable[[], float] = time.time
    benchmark: bool = False


def starting_ledger(source: MemorySource, instance: str | None) -> tuple[list[MemoryEntry], MemoryStart]:
    """The ledger a new run starts from and what run.json records of it."""
    kept = source.kept
    ledger = list(source.start) if source.start is not None else load(kept) if kept is not None else []
    if source.benchmark and instance is not None and kept is not None:
        refuse_own_instances(kept, ledger, [instance])
    record = MemoryStart(
        digest=digest(ledger),
        entries=len(ledger),
        files=len(files_of(ledger)),
        dir=str(kept.root) if kept is not None else None,
        key=kept.key if kept is not None else None,
        writable=kept is not None and kept.writable,
    )
    return ledger, record


def refuse_own_instances(kept: MemoryDir, ledger: Sequence[MemoryEntry], instances: Sequence[str]) -> None:
    """A benchmark must not read notes an earlier attempt at the same instance wrote: HarnessError naming them."""
    found = written_on(ledger, instances)
    if not found:
        return
    named = "; ".join(
        f"{instance}: {len(entries)} entries (runs {', '.join(dict.fromkeys(e.run_id for e in entries))})"
        for instance, entries in sorted(found.items())
    )
    raise HarnessError(
        f"The memory {kept.describe()} holds entries written while working on instances this batch is scored on "
        f"({named}). A run that reads notes from an earlier attempt at its own instance is not a fair score. Use a "
        "memory without them (another --memory DIR or --memory-key), or run without --memory."
    )


def keep_start(journal: Journal, ledger: Sequence[MemoryEntry]) -> None:
    """The starting ledger beside the journal, whole or not at all (a temporary file renamed into place)."""
    path = journal.artifacts / START
    tmp = path.with_name(f".{START}.tmp")
    tmp.write_text(ledger_lines(ledger), encoding="utf-8")
    os.replace(tmp, path)


def recorded_start(run_dir: Path, record: MemoryStart) -> list[MemoryEntry]:
    """The ledger a recorded run started from, checked against the digest run.json holds. A run killed before
    it kept that ledger started from nothing, or from its kept store as it still is if the digest matches."""
    path = Path(run_dir) / "artifacts" / START
    if path.is_file():
        ledger = [MemoryEntry.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()]
    else:
        kept = kept_store(record)
        ledger = [] if record.entries == 0 or kept is None else load(kept)
    if digest(ledger) != record.digest:
        where = f"{path}" if path.is_file() else f"the kept store {record.dir} (artifacts/{START} is missing)"
        raise HarnessError(
            f"The memory run {run_dir} started from is not in {where}: its digest {digest(ledger)[:12]} is not "
            f"{record.digest[:12]}, the one run.json records. It was changed after the run started."
        )
    return ledger


def kept_store(record: MemoryStart) -> MemoryDir | None:
    """The kept store a run recorded starting from, to save to again when it is resumed."""
    if record.dir is None:
        return None
    return MemoryDir(Path(record.dir), record.key or "default", record.writable)


def recorded_clock(events: Sequence[Event]) -> Callable[[], float]:
    """The times the recorded run dated its memory entries at, in order: a replay's store is then the recording's
    byte for byte. Past the recording's last, the clock's own time."""
    times = iter([w.entries[0].at for w in events if isinstance(w, MemoryWritten) and w.entries])
    return lambda: next(times, time.time())


def recorded_memory(
    run_dir: Path, record: MemoryStart, events: Sequence[Event], shown: int
) -> Callable[[int], str | None]:
    """A recorded run's memory as of each step, as a fold made then would keep it (a re-render compacting again)."""
    start = recorded_start(run_dir, record)
    written = [w for w in events if isinstance(w, MemoryWritten)]
    run_id = read_run_info(run_dir).run_id
    inherited = {e.run_id for w in written for e in w.entries} - {run_id}  # a fork's parent's and ancestors'

    def as_of(step: int) -> str | None:
        ledger = start + [e for w in written if w.step <= step for e in w.entries]
        return run_note(ledger, run_id, step, shown, inherited)

    return as_of
