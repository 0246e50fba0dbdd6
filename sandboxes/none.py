"""A sandbox with no files and no commands, for tasks that act only through their own tools (chess)."""

from __future__ import annotations

from sandboxes.base import FILE_TIMEOUT_S, Attached, ExecResult, SandboxDead


class NoSandbox:
    workdir = "."

    def exec(self, command: str, timeout: float) -> ExecResult:
        raise SandboxDead("this run has no sandbox to run commands in")

    def read_file(self, path: str, timeout: float = FILE_TIMEOUT_S) -> bytes:
        raise SandboxDead("this run has no sandbox files")

    def write_file(self, path: str, data: bytes, timeout: float = FILE_TIMEOUT_S) -> None:
        raise SandboxDead("this run has no sandbox files")

    def attach(self, argv: list[str]) -> Attached:
        raise SandboxDead("this run has no sandbox to run programs in")

    def alive(self) -> bool:
        return True

    def close(self) -> None:
        pass
