"""The Sandbox contract: where tools run commands and touch files.

A sandbox knows nothing about agents or messages. Implementations: `local`
(a subprocess in a per-run directory) and `docker` (a container per run).
Finding a run's sandbox again after a crash is each implementation's own
business (sandboxes.docker_runs.reattach; a LocalSandbox on the same workdir),
not part of this contract.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Output beyond this many bytes is drained and dropped, so endless output
# (`yes`) cannot exhaust memory. Head+tail truncation for the model happens later.
DEFAULT_OUTPUT_CAP = 1_000_000
# How long a file operation may take when its caller names no time limit (a task's files, a grader's).
FILE_TIMEOUT_S = 60.0
READ_CAP = 64 << 20  # read_file refuses larger files: they would not fit a model's context anyway
# mkdir -p of a path through a file says one of these; the path alone does not show why.
PARENT_HINTS = {errno.EEXIST: "a parent of it is a file", errno.ENOTDIR: "a parent of it is not a directory"}
# The system's own error texts (cat's, bash's, Python's), longest first so that no text matches inside a longer one.
_STRERRORS = sorted(((os.strerror(n), n) for n in errno.errorcode), key=lambda item: -len(item[0]))


@dataclass(frozen=True)
class ExecResult:
    output: str  # stdout and stderr interleaved, as text (sandboxes.text: binary lines summarised, odd bytes escaped)
    exit_code: int | None  # None when the command was killed by the timeout
    timed_out: bool = False
    output_capped: bool = False  # True when bytes past the cap were dropped
    duration_s: float = 0.0


class SandboxDead(RuntimeError):
    """The sandbox can no longer run anything (its process or container is gone)."""


class Attached(Protocol):
    """A process started in the sandbox whose stdin and stdout are a byte channel to the harness (what a
    `run_code` program calls the run's tools through). Closing it kills the process if it still runs."""

    def send(self, data: bytes) -> None:
        """Write to the process's stdin; BrokenPipeError once it has gone."""
        ...

    def receive(self, timeout: float) -> bytes:
        """What the process wrote to stdout (and stderr) within `timeout` seconds: b"" when nothing
        came; EOFError once the stream has ended and everything before was handed out."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    workdir: str  # where relative paths resolve and commands start

    def exec(self, command: str, timeout: float) -> ExecResult:
        """Run a shell command; never blocks past `timeout` seconds. What the sandbox did
        about the command (a process limit hit, a full disk) is a bracketed note at the end
        of the output."""
        ...

    def read_file(self, path: str, timeout: float = FILE_TIMEOUT_S) -> bytes:
        """The file's bytes, read with the same permissions as the shell's commands; never blocks
        past `timeout` (a pipe, a device). Failing, it raises `file_error`'s OSError
        (FileNotFoundError, PermissionError, IsADirectoryError, ...) or `file_timeout`'s TimeoutError."""
        ...

    def write_file(self, path: str, data: bytes, timeout: float = FILE_TIMEOUT_S) -> None:
        """Create or replace a file (parents created) with the shell's permissions; an existing
        file keeps its mode. Fails as read_file does; errno ENOSPC when the sandbox's disk is full."""
        ...

    def attach(self, argv: list[str]) -> Attached:
        """Start `argv` in the workdir as the shell's user, its stdin and stdout attached to the caller, with
        no network where the sandbox can take it away (a container's own network; a local sandbox's user
        namespace, where the kernel allows one). SandboxDead when the sandbox cannot run anything."""
        ...

    def alive(self) -> bool:
        """Answer quickly and honestly whether exec can still work."""
        ...

    def close(self) -> None:
        """End everything the sandbox's commands started (background jobs included)."""
        ...


def file_error(message: str, path: str, hints: dict[int, str] | None = None) -> OSError:
    """What a sandbox raises when a file cannot be read or written for a reason of the caller's making.

    `message` is what the system said (cat's or bash's stderr, an OSError's strerror): its errno
    is found in it. The error's `strerror` is the one line a model is shown: the cause and `path`
    as the sandbox's commands see it ("read-only file system: /etc/passwd"), then the hint for that
    errno, if any. OSError picks the subclass (FileNotFoundError for ENOENT, and so on)."""
    number = next((n for text, n in _STRERRORS if text in message), None)
    cause = os.strerror(number) if number is not None else message.strip().splitlines()[-1][-300:]
    hint = ({**PARENT_HINTS, **(hints or {})}).get(number or 0)
    return OSError(number or errno.EIO, f"{cause[:1].lower()}{cause[1:]}: {path}" + (f" ({hint})" if hint else ""))


def file_timeout(verb: str, path: str, timeout: float, mode: int | None) -> TimeoutError:
    """A file operation that did not finish within `timeout`; `mode` (st_mode, None: unknown) says
    what the file is, since a pipe or a device is the usual reason."""
    kinds = {
        stat.S_IFIFO: "it is a named pipe (FIFO), which waits for a process at its other end",
        stat.S_IFCHR: "it is a character device, whose data may never end",
        stat.S_IFBLK: "it is a block device",
        stat.S_IFSOCK: "it is a socket",
    }
    why = kinds.get(stat.S_IFMT(mode), "") if mode is not None else ""
    return TimeoutError(
        errno.ETIMEDOUT,
        f"timed out after {timeout:g} s {verb} {path}" + (f": {why}" if why else "; the operation was stopped"),
    )


def shell_replaced(cause: str, cwd: str) -> str:
    """The note a command's output ends with when its shell is gone and the next command gets a new one:
    the one wording for every sandbox, so the model knows what it has lost."""
    return (
        f"\n[sandbox: {cause}; the next command runs in a new shell, starting in {cwd}: "
        "the old shell's exported variables, shell functions and background jobs are gone]"
    )
