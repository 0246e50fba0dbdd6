"""The memory's ledger, pure: dating a call's changes as entries, what supersedes what, and what a view read.

An entry supersedes the entry its path held before it (a rename: the entry of the path it moved from), and an
entry stays current until the next entry of its path, which ends its validity. Nothing is removed: a deleted
file is an entry with no text, so the ledger always tells what each path held, from when until when.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.memory_entries import ROOT, MemoryChange, MemoryEntry, Provenance, latest


def dated(
    ledger: Sequence[MemoryEntry],
    changes: Sequence[MemoryChange],
    said: Provenance,
    run_id: str,
    instance: str | None,
    step: int,
    at: float,
    call_id: str,
) -> list[MemoryEntry]:
    """One call's changes as entries, numbered after the run's earlier ones. A note that names its source is an
    observation unless the model said otherwise; one that names none, a conclusion."""
    before = latest(ledger)
    mine = sum(1 for e in ledger if e.run_id == run_id)
    kind = said.kind or ("observation" if said.source else "conclusion")
    moved = {c.moved_from: c.path for c in changes if c.moved_from is not None}
    out = []
    for n, change in enumerate(changes, start=mine + 1):
        previous = before.get(change.moved_from or change.path)
        out.append(
            MemoryEntry(
                id=f"{run_id}/{n}",
                path=change.path,
                text=change.text,
                kind=kind,
                source=said.source,
                run_id=run_id,
                instance=instance,
                step=step,
                at=at,
                call_id=call_id,
                supersedes=previous.id if previous is not None else None,
                moved_to=moved.get(change.path) if change.text is None else None,
            )
        )
    return out


@dataclass(frozen=True)
class Version:
    """One entry with its validity: from its own step until `until` (None: it is still the path's latest)."""

    entry: MemoryEntry
    until: MemoryEntry | None


def versions(ledger: Iterable[MemoryEntry]) -> list[Version]:
    """Every entry with the entry that ended it, in ledger order."""
    entries = list(ledger)
    nxt: dict[str, MemoryEntry] = {}
    ends: list[MemoryEntry | None] = [None] * len(entries)
    for i in range(len(entries) - 1, -1, -1):
        ends[i] = nxt.get(entries[i].path)
        nxt[entries[i].path] = entries[i]
    return [Version(e, until) for e, until in zip(entries, ends)]


def current(ledger: Iterable[MemoryEntry]) -> list[MemoryEntry]:
    """The entries the files are made of, by path."""
    return sorted((e for e in latest(ledger).values() if e.text is not None), key=lambda e: e.path)


def superseded(ledger: Iterable[MemoryEntry]) -> list[Version]:
    """Versions with content that a later entry ended (changed, moved or deleted), the latest ended first."""
    all_versions = versions(ledger)
    at = {id(v.entry): i for i, v in enumerate(all_versions)}
    ended = [v for v in all_versions if v.until is not None and v.entry.text is not None]
    return sorted(ended, key=lambda v: at[id(v.until)], reverse=True)


def read_by_view(ledger: Iterable[MemoryEntry], path: str) -> list[MemoryEntry]:
    """The entries a `view` of `path` showed: the file's, or those of every file under the directory."""
    now = current(ledger)
    if path == ROOT:
        return now
    return [e for e in now if e.path == path or e.path.startswith(path.rstrip("/") + "/")]


def written_on(ledger: Iterable[MemoryEntry], instances: Iterable[str]) -> dict[str, list[MemoryEntry]]:
    """Instance -> the entries written while working on it, for those of `instances` that have any."""
    wanted = set(instances)
    found: dict[str, list[MemoryEntry]] = {}
    for e in ledger:
        if e.instance in wanted:
            found.setdefault(e.instance, []).append(e)
    return found
