"""A persistent bash session inside a container, spoken to over one attached socket.

One `docker exec` starts `bash`; every command after that is a line written to
its stdin and answered on its stdout, so cwd and exported variables persist and
a command costs a round trip instead of a new exec. Each command is framed:

    __h_c='<command>'; eval "$__h_c" </dev/null >&$__h_fd 2>&1; __h_rc=$?; <read the cgroup counters>
    printf '<marker> %d %d %d %d %s\\n' "$__h_rc" "$__h_n" "$__h_o" "${!:-0}" "$PWD"

The marker is fresh per command, so output cannot fake it; the line after it
carries the exit status, how many forks the container's process limit has refused
and how many processes its memory limit has killed so far (-1 when the cgroup
cannot be read), the last background job's pid and the new cwd. All of it comes from builtins, so it still arrives under a fork bomb. The command reads /dev/null, never the
protocol, and its stdin, stdout and stderr are redirections of the `eval`, which bash undoes
after it: a command that closes or redirects them (`exec 1>&-`, `exec >log`, `exec cat`)
changes them for itself only, and the next command's output arrives as usual. Docker multiplexes the exec's stdout/stderr into frames with an
8-byte header (stream id, big-endian length), parsed here from the raw socket.
"""

from __future__ import annotations

import select
import shlex
import socket
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

# Defines nothing the user's commands could trip over except these names.
# fd __h_fd is a copy of the original stdout: each command's output goes there, so that the
# shell's own stdout is restored after it (a command that closes __h_fd itself gets a new one).
# __h_pe is the pids cgroup's event file, whose "max N" counts refused forks; __h_me the
# memory cgroup's file with an "oom_kill N" line (cgroup v1 layout first, then v2).
_INIT = (
    "exec {__h_fd}>&1; __h_c=; __h_n=-1; __h_o=-1; "
    "for __h_pe in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events ''; do [[ -z $__h_pe || -r $__h_pe ]] && break; done; "
    "for __h_me in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events ''; do [[ -z $__h_me || -r $__h_me ]] && break; done\n"
)
# After each command: the counters, read by builtins only (they still work under a fork bomb).
_COUNT = (
    '[[ -n $__h_pe ]] && read -r __h_k __h_n < "$__h_pe"; '
    '[[ -n $__h_me ]] && while read -r __h_k __h_v; do [[ $__h_k == oom_kill ]] && __h_o=$__h_v; done < "$__h_me"; '
)

# Run by a second, idle shell of the same user when a command times out. Only
# builtins, so it still works when a fork bomb holds every pid the limit allows.
# It stops every process in the target shell's session but the shell (a stopped
# process cannot fork, so a bomb cannot outrun the sweep), then kills them.
# `__h_left` counts what remains, zombies included: they hold pids until reaped.
# `__h_old_shells` lists the shells of earlier `docker exec`s (their parent is outside
# the container, so their ppid is 0), for a new owner to end with their sessions.
KILL_SESSION = r"""
__h_kill() {
  local target=$1 sig round p line n
  local -a f
  for sig in STOP KILL; do
    for round in {1..50}; do
      n=0
      for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [[ $p == "$target" || $p == "$$" ]] && continue
        read -r line 2>/dev/null < "/proc/$p/stat" || continue
        f=(${line##*\) })
        [[ ${f[3]} == "$target" && ${f[0]} != Z ]] || continue
        [[ $sig == STOP && ${f[0]} == T ]] && continue
        kill -$sig "$p" 2>/dev/null && n=$((n + 1))
      done
      (( n == 0 )) && break
    done
  done
}
__h_left() {
  local p line n=0
  local -a f
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$1" ]] && continue
    read -r line 2>/dev/null < "$p/stat" || continue
    f=(${line##*\) })
    [[ ${f[3]} == "$1" ]] && n=$((n + 1))
  done
  printf %d "$n"
}
__h_old_shells() {
  local p line
  local -a f
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == 1 || $p == "$$" ]] && continue
    read -r line 2>/dev/null < "/proc/$p/stat" || continue
    f=(${line##*\) })
    [[ ${f[1]} == 0 ]] && printf '%s ' "$p"
  done
  return 0
}
"""


STOP_POLL_S = 0.2  # how often a command that may be stopped early asks whether it should be


class ShellExited(Exception):
    """The shell process ended (it ran `exit`, was killed, or its container stopped)."""


@dataclass
class Framed:
    output: bytes
    exit_code: int | None  # None: no end marker arrived before the deadline
    capped: bool
    cwd: str | None
    fork_failures: int = -1  # forks refused by the process limit since the container started; -1: unknown
    oom_kills: int = -1  # processes killed for memory since the container started; -1: unknown
    last_background: int = 0  # pid of the last job the shell put in the background (0: none yet)


class _Collector:
    """Collects output up to `cap` bytes and finds the end marker in the stream."""

    def __init__(self, marker: bytes, cap: int):
        self.marker = marker
        self.cap = cap
        self.kept = bytearray()
        self.capped = False
        self.pending = bytearray()  # not yet known to be output rather than the marker
        self.end: bytes | None = None  # "<code> <cwd>" once the marker line is complete
        self.after_marker: bytearray | None = None

    def feed(self, data: bytes) -> None:
        if self.after_marker is not None:
            self.after_marker += data
        else:
            self.pending += data
            at = self.pending.find(self.marker)
            if at < 0:
                # Keep a tail that could be the start of a marker split across reads.
                keep = len(self.marker) - 1
                cut = max(0, len(self.pending) - keep)
                self._commit(self.pending[:cut])
                del self.pending[:cut]
                return
            self._commit(self.pending[:at])
            self.after_marker = bytearray(self.pending[at + len(self.marker) :])
            self.pending = bytearray()
        nl = self.after_marker.find(b"\n")
        if nl >= 0:
            self.end = bytes(self.after_marker[:nl]).strip()

    def _commit(self, data) -> None:
        room = self.cap - len(self.kept)
        if len(data) > room:
            self.capped = True
            data = data[: max(room, 0)]
        self.kept += data

    def result(self) -> Framed:
        if self.end is not None:
            code, failures, ooms, background, cwd = (self.end.split(b" ", 4) + [b""])[:5]
            return Framed(
                bytes(self.kept),
                int(code),
                self.capped,
                cwd.decode("utf-8", "surrogateescape") or None,
                int(failures),
                int(ooms),
                int(background),
            )
        # No marker yet: the held-back tail is output too (without consuming it).
        room = max(self.cap - len(self.kept), 0)
        tail = bytes(self.pending[:room])
        return Framed(bytes(self.kept) + tail, None, self.capped or len(self.pending) > room, None)


class ShellSession:
    """One bash process in a container, reached through one exec socket."""

    def __init__(self, api, container_id: str, argv: list[str], user: str, workdir: str):
        self.api = api
        self.container_id = container_id
        self.exec_id = api.exec_create(
            container_id, argv, stdin=True, stdout=True, stderr=True, tty=False, user=user, workdir=workdir
        )["Id"]
        raw = api.exec_start(self.exec_id, socket=True)
        self._io = raw  # keeps the HTTP response (and so the socket) alive
        self.sock: socket.socket = getattr(raw, "_sock", raw)
        self.sock.setblocking(False)
        self._buf = bytearray()  # unparsed frame bytes
        self.pid: int | None = None
        self.cwd: str | None = workdir
        self._current = _Collector(b"\0", 0)
        try:
            self._send(_INIT.encode())
            # $$ is the shell's pid; a docker exec is a session leader, so it is also the session id.
            framed = self.run_framed('printf "%s" "$$"', timeout=10, cap=4096)
            if framed.exit_code is None:
                raise ShellExited("the shell did not answer within 10 s of starting")
        except ShellExited as e:
            self.close()
            code = self.exit_code()
            raise ShellExited(f"{e}; exit code {code}" if code is not None else str(e)) from None
        self.pid = int(framed.output)
        self.last_background = framed.last_background

    def run_framed(self, command: str, timeout: float, cap: int, stop: Callable[[], bool] | None = None) -> Framed:
        """Send one command; return when its end marker arrives, `timeout` passes or `stop()` says so."""
        marker = f"__HARNESS_END_{uuid.uuid4().hex}__"
        line = (
            # The fd check is not first in the line: after an eval's syntax error bash misreads the next
            # line's first word when it is a reserved word ({, [[).
            f"__h_c={shlex.quote(command)}; [[ -e /proc/$$/fd/$__h_fd ]] || exec {{__h_fd}}>&1; "
            f'eval "$__h_c" </dev/null >&$__h_fd 2>&1; __h_rc=$?; {_COUNT}'
            f'printf \'%s %d %d %d %d %s\\n\' {marker} "$__h_rc" "$__h_n" "$__h_o" "${{!:-0}}" "$PWD"\n'
        )
        self._send(line.encode("utf-8", "surrogateescape"))
        return self.collect(marker, timeout, cap, stop)

    def collect(self, marker: str, timeout: float, cap: int, stop: Callable[[], bool] | None = None) -> Framed:
        self._current = _Collector(marker.encode(), cap)
        self.wait(self._current, time.monotonic() + timeout, stop)
        return self._finish()

    def wait(self, collector: _Collector, deadline: float, stop: Callable[[], bool] | None = None) -> bool:
        """Feed `collector` until its end marker arrives (True), or `deadline` passes or `stop()` is true (False)."""
        while collector.end is None:
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop()):
                return False
            data = self._read(left if stop is None else min(left, STOP_POLL_S))
            if data:
                collector.feed(data)
        return True

    def resume(self, deadline: float) -> Framed | None:
        """After a timeout: keep reading the same command's output until `deadline`."""
        if not self.wait(self._current, deadline):
            return None
        return self._finish()

    def drain(self, quiet_s: float) -> bytes:
        """Whatever arrives until the stream is quiet for `quiet_s` (output of killed background processes)."""
        out = bytearray()
        try:
            while data := self._read(quiet_s):
                out += data
        except ShellExited:
            pass
        return bytes(out)

    def partial(self) -> Framed:
        """What the current command has printed so far (its exit code is None)."""
        return self._current.result()

    def _finish(self) -> Framed:
        framed = self._current.result()
        if framed.cwd:
            self.cwd = framed.cwd
        return framed

    def ended(self) -> bool:
        """Between commands: has the shell's stream closed (its process was killed)? Reads nothing.
        An idle shell prints nothing, so a readable socket means its end."""
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
            return bool(ready) and self.sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def exit_code(self) -> int | None:
        return self.api.exec_inspect(self.exec_id).get("ExitCode")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self._io.close()
        except Exception:
            pass

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                select.select([], [self.sock], [], 1.0)
                continue
            except OSError as e:
                raise ShellExited(f"the shell's socket is closed ({e})") from e
            view = view[sent:]

    def _read(self, timeout: float) -> bytes:
        """Payload bytes of whole frames available within `timeout` (b"" if none yet)."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return b""
        try:
            chunk = self.sock.recv(262144)
        except BlockingIOError:
            return b""
        except OSError as e:
            raise ShellExited(f"the shell's socket failed ({e})") from e
        if not chunk:
            raise ShellExited("the shell's output stream ended")
        self._buf += chunk
        return self._payloads()

    def _payloads(self) -> bytes:
        return payloads(self._buf)


def payloads(buf: bytearray) -> bytes:
    """The payload bytes of the whole frames at the start of `buf` (stdout and stderr alike), removed from it;
    a frame not yet complete stays."""
    out = bytearray()
    pos = 0
    while len(buf) - pos >= 8:
        size = struct.unpack_from(">I", buf, pos + 4)[0]
        if len(buf) - pos - 8 < size:
            break
        out += buf[pos + 8 : pos + 8 + size]
        pos += 8 + size
    del buf[:pos]
    return bytes(out)
