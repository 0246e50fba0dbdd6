"""What a run did with the agent's memory, from its journal: the memory it started from, the entries each of
its `view` calls read (with the run that wrote each), and the entries it wrote, with what each superseded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.journal.store import RunInfo, read_events
from agent.memory_store import recorded_start
from core.events import MemoryWritten, ModelReplied, ToolObserved
from core.memory_entries import MemoryEntry, MemoryStart
from memory.ledger import read_by_view


@dataclass(frozen=True)
class Read:
    step: int
    call_id: str
    path: str
    entries: list[MemoryEntry]


@dataclass
class MemoryUse:
    start: MemoryStart
    started_with: list[MemoryEntry]  # the ledger the run started from
    read: list[Read] = field(default_factory=list)
    written: list[MemoryEntry] = field(default_factory=list)

    @property
    def read_ids(self) -> list[str]:
        """Each entry the run's views read, once, in the order first read."""
        return list(dict.fromkeys(e.id for r in self.read for e in r.entries))

    @property
    def read_from_runs(self) -> list[str]:
        """The runs that wrote what this run read, in the order first read (this run's own left out)."""
        own = {e.id for e in self.written}
        return list(dict.fromkeys(e.run_id for r in self.read for e in r.entries if e.id not in own))


def memory_use(run_dir: Path, info: RunInfo) -> MemoryUse | None:
    """None for a run that kept no memory."""
    if info.memory is None:
        return None
    ledger = recorded_start(run_dir, info.memory)
    use = MemoryUse(info.memory, list(ledger))
    calls = {}
    for e in read_events(run_dir):
        if isinstance(e, ModelReplied):
            calls.update({c.id: c for c in e.reply.message.tool_calls if c.name == "memory"})
        elif isinstance(e, MemoryWritten):
            ledger += e.entries
            use.written += e.entries
        elif isinstance(e, ToolObserved) and e.observation.tool == "memory" and e.observation.status == "ok":
            call = calls.get(e.observation.call_id)
            path = _viewed(call.arguments) if call is not None else None
            if call is not None and path is not None:
                use.read.append(Read(e.step, call.id, path, read_by_view(ledger, path)))
    return use


def _viewed(arguments: str) -> str | None:
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    if not isinstance(args, dict) or args.get("command") != "view" or not isinstance(args.get("path"), str):
        return None
    return args["path"].rstrip("/") or "/"


def memory_lines(use: MemoryUse) -> list[str]:
    """The run's memory in a report's markdown: where it came from, what it read and wrote."""
    s = use.start
    where = f"{s.dir} (key {s.key}, {'read-write' if s.writable else 'read-only'})" if s.dir else "its own"
    lines = [
        f"- **memory** {where}: started from {s.entries} entries ({s.files} files, digest {s.digest[:12]}) · "
        f"read {len(use.read_ids)} entries in {len(use.read)} views · wrote {len(use.written)} entries"
    ]
    if use.read_from_runs:
        lines.append(f"  - read what these runs wrote: {', '.join(use.read_from_runs)}")
    for r in use.read:
        ids = ", ".join(e.id for e in r.entries) or "nothing"
        lines.append(f"  - step {r.step} viewed {r.path}: {ids}")
    for e in use.written:
        what = "deleted" if e.text is None else f"{e.kind}" + (f" from {e.source}" if e.source else "")
        replaced = f", supersedes {e.supersedes}" if e.supersedes else ""
        lines.append(f"  - step {e.step} wrote {e.id} {e.path} ({what}{replaced})")
    return lines


def batch_memory_lines(runs: Sequence[Any]) -> list[str]:
    """A batch's runs that kept a memory, one row each: what they started from, read (and whose) and wrote."""
    kept = [r for r in runs if r.memory is not None]
    if not kept:
        return []
    lines = [
        "",
        "## Memory",
        "",
        "| run | started from | read | read what these runs wrote | wrote |",
        "|---|---:|---|---|---|",
    ]
    for r in kept:
        use = r.memory
        read = ", ".join(use.read_ids) or "—"
        wrote = ", ".join(f"{e.id} {e.path}" for e in use.written) or "—"
        lines.append(
            f"| {r.summary.run_id} | {use.start.entries} entries | {read} | {', '.join(use.read_from_runs) or '—'} "
            f"| {wrote} |"
        )
    return lines
