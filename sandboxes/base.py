"""The Sandbox contract: where tools run commands and touch files.

A sandbox knows nothing about agents or messages. Implementations: `local`
(a subprocess in a per-run directory) and `docker` (a container per run).
Finding a run's sandbox again after a crash is each implementation's own
business (sandboxes.docker_runs.reattach; a LocalSandbox on the same workdir),
not part of this contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Output beyond this many bytes is drained and dropped, so endless output
# (`yes`) cannot exhaust memory. Head+tail truncation for the model happens later.
DEFAULT_OUTPUT_CAP = 1_000_000


@dataclass(frozen=True)
class ExecResult:
    output: str  # stdout and stderr interleaved, decoded as UTF-8 with replacement
    exit_code: int | None  # None when the command was killed by the timeout
    timed_out: bool = False
    output_capped: bool = False  # True when bytes past the cap were dropped
    duration_s: float = 0.0


class SandboxDead(RuntimeError):
    """The sandbox can no longer run anything (its process or container is gone)."""


@runtime_checkable
class Sandbox(Protocol):
    workdir: str  # where relative paths resolve and commands start

    def exec(self, command: str, timeout: float) -> ExecResult:
        """Run a shell command; never blocks past `timeout` seconds. What the sandbox did
        about the command (a process limit hit, a full disk) is a bracketed note at the end
        of the output."""
        ...

    def read_file(self, path: str) -> bytes:
        """The file's bytes, read with the same permissions as the shell's commands
        (FileNotFoundError, PermissionError, IsADirectoryError otherwise)."""
        ...

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file (parents created) with the shell's permissions; an
        existing file keeps its mode. OSError(ENOSPC) when the sandbox's disk is full."""
        ...

    def alive(self) -> bool:
        """Answer quickly and honestly whether exec can still work."""
        ...

    def close(self) -> None:
        """End everything the sandbox's commands started (background jobs included)."""
        ...
