"""The agent's own memory as data: the files under `/memories`, kept as a ledger of entries.

Every change the `memory` tool makes is one or more `MemoryEntry` values, appended and never edited: an
entry is one version of one file, with the step and time it was written at, the call that wrote it, what it
rests on (`source`: a tool call id or an artifact) and whether it records an observation or a conclusion.
A newer entry of the same path supersedes the older one, which stays in the ledger with the steps it held
for; a deletion is an entry too (`text` None). The files are what the latest entry of each path says, so the
same ledger always gives the same files, byte for byte: resume and replay rebuild a store from its entries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ROOT = "/memories"
Kind = Literal["observation", "conclusion"]


class MemoryEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str  # "<run id>/<n>": unique across the runs that share a store
    path: str  # the file this is a version of, "/memories/..."
    text: str | None  # the file's content from this entry on; None: deleted (or renamed away)
    kind: Kind = "conclusion"
    source: str | None = Field(None, description="what it rests on: a tool call id or an artifact path")
    run_id: str
    instance: str | None = None  # the task the run worked on: a batch refuses a store with its own instances
    step: int
    at: float  # unix time it was written
    call_id: str  # the memory tool call that wrote it
    supersedes: str | None = None  # the entry it replaced (the path's previous version, or the file moved here)
    moved_to: str | None = None  # a rename's entry for the path it left: where the content went


class MemoryChange(BaseModel):
    """What one memory command did to one path, before the harness dates it as an entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    text: str | None  # None: the path is gone
    moved_from: str | None = None  # a rename: the path whose content this is


class Provenance(BaseModel):
    """What the model said a write rests on (the tool's optional `source` and `kind` arguments)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str | None = None
    kind: Kind | None = None  # None: an observation when a source is named, else a conclusion


class MemoryStart(BaseModel):
    """What run.json records of the memory a run started from: enough to tell two runs' memories apart, and
    (with the ledger kept as artifacts/memory_start.jsonl) to start a replay from the very same one."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    digest: str  # of the starting ledger (`digest`)
    entries: int
    files: int
    dir: str | None = None  # the kept store (`--memory DIR`); None: the run's own, starting empty
    key: str | None = None
    writable: bool = False  # the run's new entries are saved back to `dir` when it stops


def files_of(entries: Iterable[MemoryEntry]) -> dict[str, str]:
    """The store's files: each path's latest text, deleted paths left out, sorted by path."""
    files: dict[str, str] = {}
    for e in entries:
        if e.text is None:
            files.pop(e.path, None)
        else:
            files[e.path] = e.text
    return dict(sorted(files.items()))


def latest(entries: Iterable[MemoryEntry]) -> dict[str, MemoryEntry]:
    """Each path's newest entry (a deletion included)."""
    out: dict[str, MemoryEntry] = {}
    for e in entries:
        out[e.path] = e
    return out


def ledger_lines(entries: Iterable[MemoryEntry]) -> str:
    """The ledger as JSON lines with sorted keys: the bytes a store keeps, and the digest's input."""
    return "".join(json.dumps(e.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n" for e in entries)


def digest(entries: Sequence[MemoryEntry]) -> str:
    """sha256 of the ledger: a run records the digest of the memory it started from."""
    return hashlib.sha256(ledger_lines(entries).encode()).hexdigest()


def files_digest(files: Mapping[str, str]) -> str:
    """sha256 of the files alone (path and bytes), for comparing two stores' contents."""
    body = json.dumps(sorted(files.items()), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()
