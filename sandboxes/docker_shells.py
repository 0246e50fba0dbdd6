"""The two shells of a Docker sandbox, both bash sessions of the sandbox user (shell.py).

The run's shell runs the commands; when it has to be replaced, the new one starts in the
cwd it last reported. The control shell is a clean one that those commands never touch (no
functions or variables of theirs): it reads the cgroup counters, runs the file tools, and
kills what a timed-out command started, by builtins only, so it works under a fork bomb.
A ShellState is what a shell of a new owner needs to carry on where the old one stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from docker.errors import APIError

from sandboxes.docker_options import DockerOptions
from sandboxes.shell import KILL_SESSION, Framed, ShellExited, ShellSession

# After a kill, how long to wait for the dead to be reaped (a fork bomb's zombies hold the pids limit).
REAP_WAIT_S = 3.0
# Variables bash or the engine set themselves: not part of what a run exported.
SHELL_OWN_VARS = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "HOSTNAME"})


@dataclass(frozen=True)
class ShellState:
    """What a fresh shell needs to continue where an old one stopped."""

    cwd: str
    env: dict[str, str] = field(default_factory=dict)  # exported by the run's commands


def exported(env0: bytes, container_env: list[str] | None) -> dict[str, str]:
    """The variables in `env -0` output `env0` that the run's commands exported: those that
    differ from the container's own environment (`NAME=value` items)."""
    base = dict(item.partition("=")[::2] for item in container_env or [])
    env = {}
    for item in env0.decode("utf-8", "surrogateescape").split("\0"):
        name, eq, value = item.partition("=")
        # Only names a shell can export again (a process may hold others in its environment).
        if eq and name.isidentifier() and name.isascii() and name not in SHELL_OWN_VARS and base.get(name) != value:
            env[name] = value
    return env


class Shells:
    """The run's shell and the control shell of one container, each opened when first needed."""

    def __init__(self, api, container_id: str, options: DockerOptions, raise_if_dead: Callable[[str], None]):
        self.api = api
        self.container_id = container_id
        self.options = options
        self.raise_if_dead = raise_if_dead  # says how the container died, when a shell cannot start
        self.cwd = options.workdir  # where a restarted shell begins
        self._shell: ShellSession | None = None
        self._control: ShellSession | None = None

    def ready(self) -> ShellSession:
        """The run's shell, started in the last cwd (or the workdir, if that is gone) when there is none."""
        if self._shell is not None:
            return self._shell
        self.raise_if_dead("starting a shell")
        try:
            self._shell = self._open(self.cwd)
        except ShellExited:
            if self.cwd == self.options.workdir:
                raise
            self.cwd = self.options.workdir  # the last cwd may be gone
            self._shell = self._open(self.cwd)
        return self._shell

    def control(self) -> ShellSession:
        """The control shell, opened afresh when there is none or the old one was killed (`kill -9 -1`)."""
        if self._control is not None and self._control.ended():
            self._control.close()
            self._control = None
        if self._control is None:
            self._control = self._open(self.options.workdir)
            self._control.run_framed(KILL_SESSION, timeout=10, cap=4096)
        return self._control

    def counters(self) -> Framed:
        """A no-op in the control shell: its end marker carries the container's cgroup counters."""
        return self.control().run_framed("true", timeout=10, cap=64)

    def drop(self) -> None:
        """Close the run's shell; the next command starts a new one."""
        if self._shell is not None:
            self._shell.close()
            self._shell = None

    def forget_control(self) -> None:
        """The control shell broke or hangs: the next use opens another. Its stream is closed: one left open
        with unread output (a `cat` of /dev/zero) held the container's removal 20 s in the engine."""
        if self._control is not None:
            self._control.close()
        self._control = None

    def close(self) -> None:
        for s in (self._shell, self._control):
            if s is not None:
                s.close()
        self._shell = self._control = None

    def kill_session(self, pid: int | None) -> None:
        """Kill what the shell `pid` started, and wait (briefly) until their pids are free again."""
        control = self.control()
        control.run_framed(f"__h_kill {pid}", timeout=15, cap=4096)
        deadline = time.monotonic() + REAP_WAIT_S
        while (
            control.run_framed(f"__h_left {pid}", timeout=5, cap=64).output not in (b"0", b"")
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)

    def kill_pid(self, pid: int | None) -> None:
        if pid is None:
            return
        try:
            self.control().run_framed(f"kill -KILL {pid} 2>/dev/null; true", timeout=10, cap=4096)
        except (ShellExited, APIError):
            self._control = None

    def _open(self, workdir: str) -> ShellSession:
        opts = self.options
        try:
            return ShellSession(self.api, self.container_id, opts.shell, opts.user, workdir)
        except (ShellExited, APIError) as e:
            self.raise_if_dead("starting a shell")
            raise ShellExited(
                f"cannot start the shell {' '.join(opts.shell)} as user {opts.user} in {workdir} "
                f"of image {opts.image} ({e}); the image needs bash"
            ) from e
