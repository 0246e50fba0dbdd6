"""The agent's memory as the model reads it: the current notes in full and, one line each, what was superseded
and when.

Two texts, each fixed once written, so a prefix cache stays warm. The opening note (after the task) is the
memory the run started from: it never changes during the run. A fold freezes the run's own changes as of
that fold into its `memory_text` (memory.folds puts the newest after the working-memory notes), so that text
changes only at a fold, where the prompt is rewritten anyway; a change between folds is in the prompt as the
`memory` call that made it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from core.memory_entries import MemoryEntry, latest
from memory.ledger import Version, current, superseded

OPENING = "[Memory at the start of this run"
AS_OF = "[Memory as of step"
SUPERSEDED = "Superseded (kept for the record, no longer current):"
GIST_CHARS = 160


def opening_note(ledger: Sequence[MemoryEntry], shown: int) -> str | None:
    """The memory a run starts from, as the message after its task; None when it is empty."""
    now = current(ledger)
    if not now and not ledger:
        return None
    old = superseded(ledger)
    head = (
        f"{OPENING}: {len(now)} file(s) in /memories, written by earlier runs; {len(old)} earlier version(s) "
        "superseded. The `memory` tool reads and changes them.]"
    )
    return _body(head, now, old, shown, run_id=None)


def run_note(
    ledger: Sequence[MemoryEntry], run_id: str, step: int, shown: int, inherited: Collection[str] = ()
) -> str | None:
    """What this run changed in the memory up to `step`: each path it touched as it now stands, and the versions
    its changes superseded; None when it changed nothing yet. `inherited`: the runs whose steps a fork begins
    with (its parent's, its ancestors'): their entries in the ledger were written in this run's own steps."""
    own = {run_id, *inherited}
    upto = [e for e in ledger if e.run_id not in own or e.step <= step]
    touched = {e.path for e in upto if e.run_id in own}
    if not touched:
        return None
    now = [e for e in current(upto) if e.path in touched]
    gone = [e for p, e in latest(upto).items() if p in touched and e.text is None and e.moved_to is None]
    old = [v for v in superseded(upto) if v.until is not None and v.until.run_id in own]
    head = (
        f"{AS_OF} {step}: the notes this run wrote in /memories, {len(now)} file(s) as they stand"
        + (f", {len(gone)} deleted" if gone else "")
        + f"; {len(old)} version(s) superseded. Later changes are in the steps below.]"
    )
    return _body(head, now, old, shown, run_id)


def _body(head: str, now: Sequence[MemoryEntry], old: Sequence[Version], shown: int, run_id: str | None) -> str:
    parts = [head]
    for e in now:
        parts.append(f"{e.path} ({provenance(e, run_id)})\n{(e.text or '').rstrip()}")
    if old:
        lines = [f"- {v.entry.path}: {gist(v)}, held {held(v, run_id)}" for v in old[:shown]]
        if len(old) > shown:
            lines.append(f"- and {len(old) - shown} older superseded version(s), kept in the ledger")
        parts.append(SUPERSEDED + "\n" + "\n".join(lines))
    return "\n\n".join(parts)


def when(e: MemoryEntry, run_id: str | None) -> str:
    return f"step {e.step}" if e.run_id == run_id else f"step {e.step} of run {e.run_id}"


def name(entry_id: str, run_id: str | None) -> str:
    """An entry's id as the prompt shows it: `#n` for this run's own, the whole id for an earlier run's."""
    run, _, n = entry_id.rpartition("/")
    return f"#{n}" if run == run_id else entry_id


def provenance(e: MemoryEntry, run_id: str | None) -> str:
    source = f" from {e.source}" if e.source else ""
    replaced = f"; supersedes {name(e.supersedes, run_id)}" if e.supersedes else ""
    return f"{name(e.id, run_id)}, {e.kind}{source}, written at {when(e, run_id)}{replaced}"


def held(v: Version, run_id: str | None) -> str:
    assert v.until is not None
    if v.until.text is not None:
        ended = f"superseded by {name(v.until.id, run_id)}"
    else:
        ended = f"moved to {v.until.moved_to}" if v.until.moved_to else "deleted"
    return (
        f"from {when(v.entry, run_id)} until {when(v.until, run_id)} ({name(v.entry.id, run_id)}, "
        f"{v.entry.kind}; {ended})"
    )


def gist(v: Version) -> str:
    """What the version said that its successor no longer does: its lines the next version dropped (the whole
    text when the path was deleted or moved), quoted and cut to one short line."""
    text = v.entry.text or ""
    after = v.until.text if v.until is not None else None
    dropped = [line for line in text.split("\n") if line.strip() and (after is None or line not in after.split("\n"))]
    said = " / ".join(line.strip() for line in dropped) or text.strip()
    return '"' + (said if len(said) <= GIST_CHARS else said[: GIST_CHARS - 1] + "…") + '"'
