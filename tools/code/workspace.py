"""The code index of a sandbox's workspace, as it stands at each tool call.

The workspace is the git repository holding the sandbox's workdir (else the workdir itself). Its index
is built once per commit and kept in the cache folder (`$HARNESS_CACHE/code-index/`), so the runs of a
batch that start from the same commit build it once; each call then re-reads only what changed since
the last one: in git, the files `git status` names (and those it named before and no longer does, which
are back to the commit's content); outside git, every file whose size or time changed. Files leave the
sandbox as tar archives through the Sandbox contract alone (exec, read_file), so the local and the
Docker sandbox work alike; a symbolic link travels as a link and is never followed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shlex
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from core.cache import cache_dir
from sandboxes.base import READ_CAP, Sandbox
from tools.code.archive import tar_files
from tools.code.index import VERSION, CodeIndex, build
from tools.code.languages import wanted

CACHE_ENTRIES = 40  # indexes kept on disk (django's is about 40 MB); the least recently used go first
CHUNK_BYTES = READ_CAP // 2  # files per archive, by size, so that an archive always fits one read
MAX_FILES = 50_000  # past this, the rest of a repository is left out of the index, and the tools say so
TMP = "/tmp"  # where the sandbox's listings and archives are written; both sandboxes can write there


class WorkspaceError(Exception):
    """The workspace cannot be indexed (a sandbox command failed): its message is the observation."""


@dataclass(frozen=True)
class Stat:
    size: int
    mtime: str
    regular: bool  # not a symbolic link, a folder or a device


@dataclass
class Workspace:
    root: str = ""  # the repository's top folder, as the sandbox sees it
    head: str = ""  # its commit, "" outside git
    index: CodeIndex | None = None
    seen: dict[str, Stat] = field(default_factory=dict)  # each file read since the base, as it was then
    dirty: set[str] = field(default_factory=set)  # the files git status named at the last call
    from_cache: bool = False
    reread: int = 0  # files read at the last call
    left_out: int = 0  # files past MAX_FILES


_open: dict[int, tuple[weakref.ref, Workspace]] = {}  # by the sandbox's id, while the sandbox lives


def current(sandbox: Sandbox, timeout: float) -> Workspace:
    """The workspace's index, brought up to date with what changed since the sandbox's last call."""
    held = _open.get(id(sandbox))
    if held is None or held[0]() is not sandbox:
        key = id(sandbox)
        held = _open[key] = (weakref.ref(sandbox, lambda _: _open.pop(key, None)), Workspace())
    ws = held[1]
    probe = _sections(_output(sandbox, _PROBE.format(root=shlex.quote(sandbox.workdir), stat=_STAT), timeout))
    root, head = _one(probe, "root"), _one(probe, "head")
    if ws.index is None or root != ws.root or head != ws.head:
        _base(sandbox, ws, root, head, timeout)
    else:
        ws.reread = 0
    if head:
        _refresh_git(sandbox, ws, probe, timeout)
    else:
        _refresh_files(sandbox, ws, _stats(probe.get("stat", [])), timeout)
    return ws


def _base(sandbox: Sandbox, ws: Workspace, root: str, head: str, timeout: float) -> None:
    """The commit's index (from the cache when it has it); outside git, an empty one that the refresh fills."""
    ws.root, ws.head, ws.seen, ws.dirty, ws.from_cache, ws.reread = root, head, {}, set(), False, 0
    if not head:
        ws.index = build([], previous=ws.index)
        return
    cached = load_cached(head)
    if cached is not None:
        ws.index, ws.from_cache = cached, True
        return
    listing = _stats(_sections(_output(sandbox, _TRACKED.format(root=shlex.quote(root), stat=_STAT), timeout))["stat"])
    paths = _wanted(ws, listing)
    ws.index = build(_read(sandbox, root, paths, listing, timeout), previous=ws.index)
    ws.seen = {p: listing[p] for p in paths}
    ws.reread = len(paths)
    if not sandbox.exec(f"cd -- {shlex.quote(root)} && git status --porcelain -uno", timeout).output.strip():
        save_cached(head, ws.index)  # every tracked file is as the commit has it


def _refresh_git(sandbox: Sandbox, ws: Workspace, probe: dict[str, list[str]], timeout: float) -> None:
    now = _stats(probe.get("stat", []))  # the files git status names that still exist
    named = set(probe.get("status", []))
    back = ws.dirty - named  # changed before, as the commit has them now
    changed = {p for p in named if now.get(p) != ws.seen.get(p)} | back
    ws.dirty = named
    if changed:
        _apply(sandbox, ws, changed, now, timeout)


def _refresh_files(sandbox: Sandbox, ws: Workspace, now: dict[str, Stat], timeout: float) -> None:
    changed = {p for p in now if now[p] != ws.seen.get(p)} | (ws.seen.keys() - now.keys())
    if changed:
        _apply(sandbox, ws, changed, now, timeout)


def _apply(sandbox: Sandbox, ws: Workspace, changed: set[str], now: dict[str, Stat], timeout: float) -> None:
    """Read the changed files that are indexed (a file no longer there, or no longer indexable, leaves)."""
    readable = [p for p in sorted(changed) if (s := now.get(p)) is None or (s.regular and wanted(p, s.size))]
    room = MAX_FILES - len(ws.index.entries if ws.index is not None else ())
    if len(readable) > room:
        ws.left_out += len(readable) - max(room, 0)
        readable = readable[: max(room, 0)]
    read = dict(_read(sandbox, ws.root, readable, now, timeout))
    ws.index = build([(p, read.get(p)) for p in sorted(changed)], previous=ws.index, keep=True)
    ws.reread += len(read)
    for p in changed:
        if p in read:
            ws.seen[p] = now.get(p) or Stat(len(read[p]), "", True)
        else:
            ws.seen.pop(p, None)


def _wanted(ws: Workspace, listing: dict[str, Stat]) -> list[str]:
    paths = sorted(p for p, s in listing.items() if s.regular and wanted(p, s.size))
    ws.left_out = max(0, len(paths) - MAX_FILES)
    return paths[:MAX_FILES]


# Listings print a section name ("\x01stat"), then per file its type, size, time and path, NUL-separated;
# "\x01status" holds the paths git status names.
_STAT = (
    "xargs -0 -r stat --printf '%F\\t%s\\t%.9Y\\t%n\\0' -- 2>/dev/null || true"  # a file deleted since it was listed
)
_PROBE = """cd -- {root} || exit 3
if top=$(git rev-parse --show-toplevel 2>/dev/null) && head=$(git rev-parse -q --verify HEAD 2>/dev/null); then
  cd -- "$top" || exit 3
  printf '\\001root\\0%s\\0\\001head\\0%s\\0\\001status\\0' "$top" "$head"
  git status --porcelain=v1 -z --untracked-files=all --no-renames | cut -z -c4-
  printf '\\001stat\\0'
  git status --porcelain=v1 -z --untracked-files=all --no-renames | cut -z -c4- | {stat}
else
  printf '\\001root\\0%s\\0\\001head\\0\\0\\001stat\\0' "$PWD"
  find . -name .git -prune -o \\( -type f -o -type l \\) -printf '%y\\t%s\\t%T@\\t%P\\0' 2>/dev/null
fi
"""
_TRACKED = "cd -- {root} || exit 3\nprintf '\\001stat\\0'\ngit ls-files -z --cached | {stat}\n"


def _read(sandbox: Sandbox, root: str, paths: list[str], sizes: dict[str, Stat], timeout: float) -> Iterator:
    """The files' bytes, an archive at a time, each small enough to be read back whole. A file that is
    gone by the time it is archived is left out."""
    chunk: list[str] = []
    total = 0
    for path in paths:
        size = sizes[path].size if path in sizes else 0
        if chunk and total + size > CHUNK_BYTES:
            yield from _archive(sandbox, root, chunk, timeout)
            chunk, total = [], 0
        chunk.append(path)
        total += size
    if chunk:
        yield from _archive(sandbox, root, chunk, timeout)


def _archive(sandbox: Sandbox, root: str, paths: list[str], timeout: float) -> Iterator[tuple[str, bytes]]:
    name = f"{TMP}/.harness-code-{uuid.uuid4().hex}"
    sandbox.write_file(f"{name}.list", b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths), timeout)
    try:
        script = (
            f"cd -- {shlex.quote(root)} || exit 3\ntar --null --no-recursion --ignore-failed-read -czf - -T {name}.list"
        )
        _output(sandbox, script, timeout, into=f"{name}.out")
        yield from tar_files(sandbox.read_file(f"{name}.out", timeout))
    finally:
        sandbox.exec(f"rm -f {name}.list {name}.out", timeout)


def _output(sandbox: Sandbox, script: str, timeout: float, into: str | None = None) -> bytes:
    """What a script prints, which may pass the sandbox's output cap: it goes to a file, read back whole.
    Everything runs in a subshell, so the sandbox's shell keeps its folder and variables."""
    name = into or f"{TMP}/.harness-code-{uuid.uuid4().hex}"
    command = f"( ( {script}\n) > {name} 2> {name}.err; rc=$?; tail -c 600 {name}.err; rm -f {name}.err; exit $rc )"
    try:
        result = sandbox.exec(command, timeout)
        if result.timed_out:
            raise WorkspaceError(f"reading the workspace took longer than {timeout:g} s")
        if result.exit_code != 0:
            raise WorkspaceError(f"reading the workspace failed: {result.output.strip() or f'exit {result.exit_code}'}")
        return sandbox.read_file(name, timeout)
    finally:
        if into is None:
            sandbox.exec(f"rm -f {name}", timeout)


def _sections(data: bytes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for raw in data.split(b"\0"):
        text = raw.decode("utf-8", "surrogateescape")
        if text.startswith("\x01"):
            current = out.setdefault(text[1:], [])
        else:
            current.append(text)
    return out


def _one(sections: dict[str, list[str]], name: str) -> str:
    values = sections.get(name) or [""]
    return values[0]


def _stats(rows: list[str]) -> dict[str, Stat]:
    out = {}
    for row in rows:
        parts = row.split("\t", 3)
        if len(parts) == 4:
            kind, size, mtime, path = parts
            out[path.removeprefix("./")] = Stat(int(size), mtime, kind in ("f", "regular file", "regular empty file"))
    return out


def _cache_path(head: str) -> Path:
    return cache_dir() / "code-index" / f"{head}-v{VERSION}.pickle"


def load_cached(head: str) -> CodeIndex | None:
    path = _cache_path(head)
    try:
        with path.open("rb") as f:
            index = pickle.load(f)
        os.utime(path)  # recently used: the last to be dropped
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
        return None
    return index if isinstance(index, CodeIndex) else None


def save_cached(head: str, index: CodeIndex) -> None:
    """Best effort: a cache that cannot be written (a full or read-only disk) only costs the next build."""
    path = _cache_path(head)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        with tmp.open("wb") as f:
            pickle.dump(index, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
        kept = sorted(path.parent.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[CACHE_ENTRIES:]:
            old.unlink(missing_ok=True)
