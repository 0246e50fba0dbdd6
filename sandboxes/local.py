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
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from sandboxes.base import DEFAULT_OUTPUT_CAP, ExecResult, SandboxDead

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
        if self.closed:
            raise SandboxDead("the local sandbox was closed")
        start = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", command],
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
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(min(left, 0.5)):
                    continue
                data = os.read(proc.stdout.fileno(), 65536)
                if not data:
                    break
                room = self.output_cap - kept
                capped = capped or len(data) > room
                if room > 0:
                    chunks.append(data[:room])
                    kept += len(chunks[-1])
        if timed_out:
            _kill_group(proc)
        proc.stdout.close()
        code = proc.wait()
        if not _members(proc.pid):  # nothing left in the background: forget the group
            self._forget(proc.pid)
        return ExecResult(
            output=b"".join(chunks).decode("utf-8", errors="replace"),
            exit_code=None if timed_out else code,
            timed_out=timed_out,
            output_capped=capped,
            duration_s=time.monotonic() - start,
        )

    def _path(self, path: str) -> Path:
        return Path(self.workdir, path)

    def read_file(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
