"""The local sandbox: each command is a `bash -c` subprocess in a per-run directory.

For tests and trusted use only: it isolates nothing but the working directory
and the environment (host secrets are not passed to commands).

Each command runs in its own process group, recorded (owner pid, group id, the
sandbox's token) in a file beside the workdir, `<workdir>.groups`. Closing the
sandbox ends its groups, background children included. A process killed with -9
cannot close anything, so a new LocalSandbox on the same workdir (a resumed run)
first ends the groups whose owner is gone. A group is only signalled while one of
its processes carries the sandbox's token in its environment, so a recycled group
id of some unrelated process is never hit.

The file operations run as commands too (`cat`, in a process group of their own), so a
pipe or a device that never ends is killed at its timeout like any command.
"""

from __future__ import annotations

import errno
import functools
import os
import posixpath
import select
import selectors
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from core.interrupts import Abandoned, abandoning, requested
from sandboxes.base import (
    DEFAULT_OUTPUT_CAP,
    FILE_TIMEOUT_S,
    READ_CAP,
    ExecResult,
    SandboxDead,
    file_error,
    file_timeout,
    shell_replaced,
)
from sandboxes.text import as_text

# Only these host variables reach commands; API keys and the like stay out.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ")
TOKEN_VAR = "HARNESS_SANDBOX_TOKEN"  # marks the processes of one sandbox


def _members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group `pgid`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def _carries(pid: int, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{TOKEN_VAR}={token}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def end_group(pgid: int, token: str) -> bool:
    """SIGKILL the group `pgid` if a process of it carries `token`; True when it was signalled."""
    if not any(_carries(pid, token) for pid in _members(pgid)):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_groups(path: Path) -> list[tuple[int, int, str]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2]))
    return rows


def _write_groups(path: Path, rows: list[tuple[int, int, str]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(f"{owner} {pgid} {token}\n" for owner, pgid, token in rows))
    os.replace(tmp, path)


def end_leftover_groups(groups_file: str | Path) -> list[int]:
    """End the recorded groups whose owning process is gone (it was killed); return their ids."""
    path = Path(groups_file)
    rows = _read_groups(path)
    ended = [pgid for owner, pgid, token in rows if not _owner_alive(owner) and end_group(pgid, token)]
    if rows:
        _write_groups(path, [r for r in rows if _owner_alive(r[0])])
    return ended


@dataclass(frozen=True)
class _Ran:
    output: bytes
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    capped: bool
    duration_s: float


class LocalSandbox:
    def __init__(self, workdir: str | Path | None = None, output_cap: int = DEFAULT_OUTPUT_CAP):
        self.workdir = str(Path(workdir or tempfile.mkdtemp(prefix="harness-")).resolve())
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        self.output_cap = output_cap
        self.closed = False
        self.token = uuid.uuid4().hex
        self.env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ} | {TOKEN_VAR: self.token}
        self.groups_file = Path(self.workdir + ".groups")
        self._groups_lock = threading.Lock()
        self.ended_leftovers = end_leftover_groups(self.groups_file)  # what a killed owner left running

    def exec(self, command: str, timeout: float) -> ExecResult:
        ran = self._run(["bash", "-c", command], timeout, self.output_cap)
        note = shell_replaced("the shell was killed at the timeout, with all it started", self.workdir)
        return ExecResult(
            output=as_text(ran.output) + (note if ran.timed_out else ""),
            exit_code=ran.exit_code,
            timed_out=ran.timed_out,
            output_capped=ran.capped,
            duration_s=ran.duration_s,
        )

    def read_file(self, path: str, timeout: float = FILE_TIMEOUT_S) -> bytes:
        # On failure cat runs again for its message alone: the first one's stderr would mix with the bytes.
        script = (
            'if [ -d "$1" ]; then echo "Is a directory"; exit 21; fi; cat -- "$1" 2>/dev/null && exit 0; '
            'LC_ALL=C cat -- "$1" 2>&1 >/dev/null; exit 1'
        )
        ran = self._file_op(script, [path], path, "reading", timeout, READ_CAP + 1)
        if len(ran.output) > READ_CAP:
            raise OSError(
                errno.EFBIG,
                f"file too large: {self._shown(path)} (over {READ_CAP >> 20} MiB; read parts of it with the shell: "
                "head, sed -n)",
            )
        return ran.output

    def write_file(self, path: str, data: bytes, timeout: float = FILE_TIMEOUT_S) -> None:
        # The bytes go to a file of the harness first, never blocking; `cat` copies them into place, so
        # an existing file keeps its mode and a pipe in the way only blocks a process that can be killed.
        with tempfile.NamedTemporaryFile(prefix="harness-transfer-") as stage:
            stage.write(data)
            stage.flush()
            script = 'mkdir -p -- "$(dirname -- "$2")" && cat -- "$1" > "$2"'
            self._file_op(script, [stage.name, path], path, "writing", timeout, 65536)

    def _file_op(self, script: str, args: list[str], path: str, verb: str, timeout: float, cap: int) -> _Ran:
        ran = self._run(["bash", "-c", script, "file", *args], timeout, cap)
        if ran.timed_out:
            try:
                mode: int | None = os.stat(self._path(path)).st_mode
            except OSError:
                mode = None
            raise file_timeout(verb, self._shown(path), timeout, mode)
        if ran.exit_code != 0:
            raise file_error(ran.output.decode("utf-8", "replace")[-400:], self._shown(path))
        return ran

    def _path(self, path: str) -> Path:
        return Path(self.workdir, path)

    def _shown(self, path: str) -> str:
        """The path as the sandbox's commands see it: relative ones from the workdir, where they start."""
        return posixpath.normpath(path)

    def _run(self, argv: list[str], timeout: float, cap: int) -> _Ran:
        """Run `argv` in the workdir in a process group of its own (recorded, so a harness killed meanwhile
        leaves nothing running); its stdout and stderr together, at most `cap` bytes kept. At `timeout`
        the whole group is killed."""
        if self.closed:
            raise SandboxDead("the local sandbox was closed")
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills its children too
        )
        self._record(proc.pid)
        assert proc.stdout is not None  # stdout=PIPE
        chunks, kept, capped, timed_out = [], 0, False, False
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                while True:
                    left = timeout - (time.monotonic() - start)
                    if left <= 0:
                        timed_out = True
                        break
                    if abandoning():  # a signal stopped the run: the command goes as at a timeout
                        raise Abandoned(requested() or "signal")
                    if not sel.select(min(left, 0.2)):
                        continue
                    data = os.read(proc.stdout.fileno(), 65536)
                    if not data:
                        break
                    room = cap - kept
                    capped = capped or len(data) > room
                    if room > 0:
                        chunks.append(data[:room])
                        kept += len(chunks[-1])
        except BaseException:  # nobody waits for the command any more: nothing it started may go on
            _kill_group(proc)
            proc.stdout.close()
            proc.wait()
            raise
        if timed_out:
            _kill_group(proc)
        proc.stdout.close()
        code = proc.wait()
        if not _members(proc.pid):  # nothing left in the background: forget the group
            self._forget(proc.pid)
        return _Ran(b"".join(chunks), None if timed_out else code, timed_out, capped, time.monotonic() - start)

    def attach(self, argv: list[str]) -> LocalAttached:
        """`argv` in a process group of its own (recorded, as a command's), in a network namespace of its own
        where the kernel allows an unprivileged one: then it has no network at all."""
        if self.closed:
            raise SandboxDead("the local sandbox was closed")
        proc = subprocess.Popen(
            [*no_network_prefix(), *argv],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._record(proc.pid)
        return LocalAttached(proc, lambda: self._forget(proc.pid))

    def alive(self) -> bool:
        return not self.closed and os.path.isdir(self.workdir)

    def close(self) -> None:
        """End every process the sandbox's commands started, background ones included."""
        self.closed = True
        with self._groups_lock:
            rows = _read_groups(self.groups_file)
            for _owner, pgid, token in rows:
                if token == self.token:
                    end_group(pgid, token)
            if rows:
                _write_groups(self.groups_file, [r for r in rows if r[2] != self.token])

    def _record(self, pgid: int) -> None:
        with self._groups_lock, open(self.groups_file, "a") as f:
            f.write(f"{os.getpid()} {pgid} {self.token}\n")
            f.flush()
            os.fsync(f.fileno())

    def _forget(self, pgid: int) -> None:
        with self._groups_lock:
            _write_groups(
                self.groups_file, [r for r in _read_groups(self.groups_file) if (r[1], r[2]) != (pgid, self.token)]
            )


class LocalAttached:
    """An attached process of the local sandbox (sandboxes.base.Attached)."""

    def __init__(self, proc: subprocess.Popen, forget):
        self.proc = proc
        self._forget = forget
        assert proc.stdin is not None and proc.stdout is not None  # both PIPE
        self._in, self._out = proc.stdin, proc.stdout

    def send(self, data: bytes) -> None:
        self._in.write(data)
        self._in.flush()

    def receive(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._out], [], [], max(timeout, 0))
        if not ready:
            return b""
        data = os.read(self._out.fileno(), 65536)
        if not data:
            raise EOFError("the process's output ended")
        return data

    def close(self) -> None:
        _kill_group(self.proc)
        for pipe in (self._in, self._out):
            try:
                pipe.close()
            except OSError:
                pass
        self.proc.wait()
        self._forget()


@functools.cache
def no_network_prefix() -> tuple[str, ...]:
    """`unshare -rn` where this kernel lets an unprivileged process have a user and a network namespace of
    its own (the process then sees no interface but a loopback that is down); else nothing."""
    try:
        ok = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return ("unshare", "-rn") if ok else ()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
