"""A process of a Docker sandbox attached to the harness through its own `docker exec` socket.

The exec starts `sh`, which prints its pid (the process's pid inside the container) and then becomes the
process with stderr joined to stdout (so one stream keeps their order: Docker sends the two apart), and can
be killed by that pid from the sandbox's control shell. The output arrives in Docker's frames
(shell.payloads); what the harness sends is its stdin.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable

from docker.errors import APIError

from sandboxes.base import SandboxDead
from sandboxes.shell import payloads

START_S = 30.0  # how long the process may take to start (an image's first exec can be slow)
SEND_S = 30.0  # a process that reads nothing for this long is taken as gone


class DockerAttached:
    def __init__(self, api, container_id: str, argv: list[str], user: str, workdir: str, kill: Callable[[int], None]):
        wrapped = ["sh", "-c", 'echo "$$"; exec "$@" 2>&1', "attached", *argv]
        try:
            exec_id = api.exec_create(
                container_id, wrapped, stdin=True, stdout=True, stderr=True, tty=False, user=user, workdir=workdir
            )["Id"]
            self._io = api.exec_start(exec_id, socket=True)  # holds the HTTP response, so the socket stays open
        except APIError as e:
            raise SandboxDead(f"cannot start {argv[0]} in the container: {e}") from e
        self.sock: socket.socket = getattr(self._io, "_sock", self._io)
        self.sock.settimeout(SEND_S)
        self._kill = kill
        self._frames = bytearray()
        self._ready = bytearray()  # payload bytes not yet handed out
        self.pid: int | None = None
        deadline = time.monotonic() + START_S
        try:
            while b"\n" not in self._ready:
                if time.monotonic() > deadline:
                    raise SandboxDead(f"{argv[0]} did not start in the container within {START_S:g} s")
                self._ready += self._read(deadline - time.monotonic())
        except EOFError:
            self.close()
            said = bytes(self._ready).decode("utf-8", "replace").strip()[-300:]
            raise SandboxDead(f"{argv[0]} could not start in the container: {said or 'it ended at once'}") from None
        except SandboxDead:
            self.close()
            raise
        line, _, rest = bytes(self._ready).partition(b"\n")
        self.pid, self._ready = int(line), bytearray(rest)

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise BrokenPipeError(f"the process's stdin is closed ({e})") from e

    def receive(self, timeout: float) -> bytes:
        if not self._ready:
            self._ready += self._read(timeout)
        out, self._ready = bytes(self._ready), bytearray()
        return out

    def _read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0))
        if not ready:
            return b""
        try:
            chunk = self.sock.recv(262144)
        except OSError as e:
            raise EOFError(f"the process's stream failed ({e})") from e
        if not chunk:
            raise EOFError("the process's output ended")
        self._frames += chunk
        return payloads(self._frames)

    def close(self) -> None:
        if self.pid is not None:
            self._kill(self.pid)
            self.pid = None
        for closing in (self.sock.close, self._io.close):
            try:
                closing()
            except Exception:  # already closed with the container
                pass
