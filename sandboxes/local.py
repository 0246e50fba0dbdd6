"""The local sandbox: each command is a `bash -c` subprocess in a per-run directory.

For tests and trusted use only: it isolates nothing but the working directory
and the environment (host secrets are not passed to commands).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from sandboxes.base import DEFAULT_OUTPUT_CAP, ExecResult, SandboxDead

# Only these host variables reach commands; API keys and the like stay out.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ")


class LocalSandbox:
    def __init__(self, workdir: str | Path | None = None, output_cap: int = DEFAULT_OUTPUT_CAP):
        self.workdir = str(Path(workdir or tempfile.mkdtemp(prefix="harness-")).resolve())
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        self.output_cap = output_cap
        self.closed = False
        self.env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}

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
        self.closed = True


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
