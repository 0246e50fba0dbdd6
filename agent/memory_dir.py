"""A memory kept across runs (`--memory DIR`): one store per key (a repository, say) under DIR.

    DIR/<key>/ledger.jsonl    every entry, in order (core.memory_entries): the store itself
    DIR/<key>/memories/...    the files as the ledger makes them, for a person to read or edit

A run loads the store when it starts (a file someone edited by hand becomes an entry of its own, so nothing a
person wrote is lost) and, when the store is writable, appends its new entries each time it stops; a
read-only store is never written. A lock on the folder keeps concurrent runs from interleaving their saves.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from core.errors import HarnessError
from core.memory_entries import ROOT, MemoryEntry, files_of, ledger_lines

BY_HAND = "by-hand"
PER_REPOSITORY = "{repo}"  # a batch's key: each instance's repository
TMP = ".harness-tmp-"  # a file being written: never taken for a memory file


@dataclass(frozen=True)
class MemoryDir:
    root: Path
    key: str = "default"
    writable: bool = True

    def __post_init__(self) -> None:
        # Absolute from the start: a process with another working folder (a batch's Ray worker, which gets the
        # store pickled) must find the folder the command was given, not one of the same name beside it.
        object.__setattr__(self, "root", Path(os.path.abspath(os.path.expanduser(self.root))))

    @property
    def folder(self) -> Path:
        return self.root / (re.sub(r"[^A-Za-z0-9_.-]+", "__", self.key).strip(".") or "default")

    def for_instance(self, instance: object) -> MemoryDir:
        """A batch's store for one instance: its repository's under the key `{repo}` (else 'default')."""
        if self.key != PER_REPOSITORY:
            return self
        return MemoryDir(self.root, str(getattr(instance, "repo", None) or "default"), self.writable)

    def describe(self) -> str:
        return f"{self.folder} (key {self.key!r}, {'read-write' if self.writable else 'read-only'})"


def parse(text: str, key: str = "default") -> MemoryDir:
    """`DIR`, `DIR:rw` or `DIR:ro`. Refused here, before any run starts, rather than when the first run stops
    and saves: a mode other than ro or rw, and a DIR that is a file or lies under one."""
    path, sep, mode = text.rpartition(":")
    if sep and path and re.fullmatch(r"[A-Za-z]+", mode) and mode not in ("ro", "rw"):
        raise HarnessError(
            f"--memory {text}: the mode after the colon is ro or rw, not {mode!r}; write DIR:ro or DIR:rw."
        )
    store = (
        MemoryDir(Path(path), key, writable=mode == "rw")
        if mode in ("ro", "rw") and path
        else MemoryDir(Path(text), key)
    )
    there = next(p for p in (store.root, *store.root.parents) if p.exists())
    if not there.is_dir():
        raise HarnessError(f"--memory {text}: {there} is a file, not a folder; name a folder to keep the memory in.")
    return store


def load(store: MemoryDir) -> list[MemoryEntry]:
    """The store's ledger, with an entry for each file edited by hand since it was last saved."""
    if not store.folder.exists():
        if not store.writable:
            raise HarnessError(
                f"The read-only memory {store.describe()} does not exist. Check DIR and --memory-key, or make "
                "it writable (DIR:rw) so the run starts it."
            )
        return []
    with _locked(store, shared=True):
        ledger = _read_ledger(store)
        return ledger + hand_edits(store, ledger)


def save(store: MemoryDir, ledger: Sequence[MemoryEntry]) -> int:
    """Append the entries the store lacks and bring its files up to date; how many were new. Saving twice
    appends nothing the second time."""
    if not store.writable:
        return 0
    try:
        store.folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessError(f"Cannot create the memory folder {store.folder}: {e.strerror}.") from None
    with _locked(store, shared=False):
        known = {e.id for e in _read_ledger(store)}
        new = [e for e in ledger if e.id not in known]
        if not new:
            return 0
        try:
            with open(store.folder / "ledger.jsonl", "a", encoding="utf-8") as f:
                f.write(ledger_lines(new))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise HarnessError(f"Cannot save the memory to {store.folder}: {e.strerror}.") from None
        materialise(store.folder / "memories", files_of(ledger), {e.path for e in new})
        return len(new)


def materialise(folder: Path, files: dict[str, str], paths: set[str] | None = None) -> None:
    """Write `files` (paths under /memories) into `folder`; `paths`: only these (others stay as they are)."""
    for path in sorted(paths if paths is not None else set(files)):
        target = folder / path.removeprefix(ROOT + "/")
        if path in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(TMP + target.name)
            tmp.write_bytes(files[path].encode())
            os.replace(tmp, target)
        elif target.is_file():
            target.unlink()
            _prune(target.parent, folder)


def _prune(directory: Path, top: Path) -> None:
    while directory != top and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def on_disk(folder: Path) -> dict[str, bytes]:
    """The files in a memories folder by their /memories path (the harness's own temporary files left out)."""
    if not folder.is_dir():
        return {}
    return {
        f"{ROOT}/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(TMP)
    }


def hand_edits(store: MemoryDir, ledger: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """Each file that differs from what the ledger says (added, changed or removed by a person), as an entry."""
    folder = store.folder / "memories"
    want, found = files_of(ledger), on_disk(folder)
    n = sum(1 for e in ledger if e.run_id == BY_HAND)
    latest = {e.path: e for e in ledger}
    out = []
    for path in sorted(set(want) | set(found)):
        data = found.get(path)
        if path in want and data == want[path].encode():
            continue
        file = folder / path.removeprefix(ROOT + "/")
        try:
            text = data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError as e:
            raise HarnessError(
                f"The memory file {file} is not UTF-8 (byte 0x{e.object[e.start]:02x} at offset {e.start}); memory "
                "files hold UTF-8 text. Save it as UTF-8, or remove it."
            ) from None
        n += 1
        previous = latest.get(path)
        out.append(
            MemoryEntry(
                id=f"{BY_HAND}/{n}",
                path=path,
                text=text,
                run_id=BY_HAND,
                step=0,
                at=file.stat().st_mtime if data is not None else 0.0,
                call_id="",
                source="edited by hand",
                supersedes=previous.id if previous is not None else None,
            )
        )
    return out


def _read_ledger(store: MemoryDir) -> list[MemoryEntry]:
    path = store.folder / "ledger.jsonl"
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(MemoryEntry.model_validate_json(line))
        except ValidationError as e:
            raise HarnessError(
                f"Line {n} of the memory ledger {path} is not a memory entry ({e.errors()[0]['msg']}). The ledger "
                "is the store's record: restore the line from a backup, or move the folder away to start afresh."
            ) from None
    return out


@contextmanager
def _locked(store: MemoryDir, shared: bool) -> Iterator[None]:
    """A read-only store is locked only where its lock file exists: reading it must not write to it."""
    lock = store.folder / ".lock"
    if not store.writable and not lock.exists():
        yield
        return
    with open(lock, "r" if not store.writable else "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
