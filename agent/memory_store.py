"""The run's memory: the store the `memory` tool works on (tools.builtin.memory.MemoryBackend).

It holds the ledger the run started from (empty, a kept store's, or a recording's) and every entry the run
writes. A call's changes are dated as entries (memory.ledger) and journaled as one `memory_written` event
before the call's observation, so resume and replay rebuild the store from the journal alone, byte for byte;
then the files are written under the run folder's memories/ for a person to read. `open_memory` starts one
for a new run and `reopen_memory` for a resumed one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from agent.journal.store import Journal
from agent.memory_dir import MemoryDir, load, materialise
from core.errors import HarnessError
from core.events import Event, MemoryWritten
from core.memory_entries import MemoryChange, MemoryEntry, MemoryStart, Provenance, digest, files_of, ledger_lines
from memory.ledger import dated
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
        self._files = files_of(self.ledger)
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


def open_memory(
    journal: Journal, run_id: str, instance: str | None, kept: MemoryDir | None, start: Sequence[MemoryEntry] | None
) -> tuple[Sequence[MemoryEntry], MemoryStart]:
    """The ledger a new run starts from (`start` when given, as a replay's is; else the kept store's, or none) and
    what run.json records of it; the ledger itself is kept in artifacts/ so a replay can start from it."""
    ledger = list(start) if start is not None else load(kept) if kept is not None else []
    journal.store_artifact(START, ledger_lines(ledger))
    record = MemoryStart(
        digest=digest(ledger),
        entries=len(ledger),
        files=len(files_of(ledger)),
        dir=str(kept.root) if kept is not None else None,
        key=kept.key if kept is not None else None,
        writable=kept is not None and kept.writable,
    )
    return ledger, record


def recorded_start(run_dir: Path, record: MemoryStart) -> list[MemoryEntry]:
    """The ledger a recorded run started from, checked against the digest run.json holds."""
    path = Path(run_dir) / "artifacts" / START
    if not path.is_file():
        raise HarnessError(
            f"Run {run_dir} used the memory tool but has no artifacts/{START}: its starting memory is lost."
        )
    ledger = [MemoryEntry.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if digest(ledger) != record.digest:
        raise HarnessError(
            f"{path} does not match the digest run.json records for the run's starting memory "
            f"({digest(ledger)[:12]} against {record.digest[:12]}): it was changed after the run."
        )
    return ledger


def recorded_clock(events: Sequence[Event]) -> Callable[[], float]:
    """The times the recorded run dated its memory entries at, in order: a replay's store is then the recording's
    byte for byte. Past the recording's last, the clock's own time."""
    times = iter([w.entries[0].at for w in events if isinstance(w, MemoryWritten) and w.entries])
    return lambda: next(times, time.time())
