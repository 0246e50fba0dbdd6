"""What a Docker sandbox says about its limits: the process limit refusing forks, the memory
limit killing a process, a full workspace, and a container that stopped (and why).

The container's cgroup counters arrive with every end marker (shell.py); a command is
judged against the counts seen before it, so each note is about that command alone.
"""

from __future__ import annotations

import shlex
import time

import docker
from docker.errors import APIError, DockerException, NotFound

from sandboxes.base import SandboxDead
from sandboxes.docker_options import DockerOptions
from sandboxes.docker_shells import Shells
from sandboxes.shell import Framed, ShellExited, ShellSession

PROBE_TIMEOUT_S = 5.0
# A command that leaves a job in the background gets this long to show whether it is a fork bomb.
FORK_SETTLE_S = 0.5
DRAIN_QUIET_S = 0.2


class Limits:
    """The counters as last seen (the baselines for the next command), and the notes on them."""

    def __init__(self, shells: Shells, options: DockerOptions):
        self.shells = shells
        self.options = options
        self.forks_refused = -1  # refused forks counted so far
        self.oom_kills = -1  # processes killed for memory so far
        self.background = False  # jobs an earlier command put in the background may still run

    def baseline(self) -> None:
        framed = self.shells.counters()
        self.forks_refused, self.oom_kills = framed.fork_failures, framed.oom_kills

    def before_command(self, shell: ShellSession) -> str:
        """Before a command, while jobs of earlier ones may run: if they hit the process limit
        since, end everything the shell started, so this command starts clean, and say so."""
        if not self.background or self._refused_now() <= self.forks_refused:
            return ""
        self._sweep(shell)  # their late output belongs to no command
        return self.after_sweep(since_last=True)

    def after_command(self, shell: ShellSession, framed: Framed) -> tuple[bytes, str]:
        """A finished command's output, and notes on what the limits did to it; when the process
        limit refused its forks, everything the shell started is killed first."""
        output, note = framed.output, ""
        if framed.oom_kills > self.oom_kills >= 0:
            note += f"\n[sandbox: a process was killed for going over the memory limit ({self.options.memory})]"
        self.oom_kills = max(self.oom_kills, framed.oom_kills)
        if self._hit_process_limit(shell, framed):
            output = (output + self._sweep(shell))[: self.options.output_cap]  # what the killed wrote late
            note += self.after_sweep()
        if b"No space left on device" in output and self.options.disk and self._workspace_full():
            note += (
                f"\n[sandbox: the workspace {self.options.workdir} is full: its quota is {self.options.disk}; "
                "delete files to make room]"
            )
        return output, note

    def after_sweep(self, since_last: bool = False) -> str:
        """Everything the shell started was killed: say so if forks were refused since the last
        look, and take a new baseline."""
        self.background = False
        now = self._refused_now()
        refused, self.forks_refused = now - self.forks_refused, max(now, self.forks_refused)
        if refused <= 0:
            return ""
        return (
            f"\n[sandbox: {'since the last command, ' if since_last else ''}the process limit ({self.options.pids} processes) "
            f"was reached: {refused} process creations were "
            "refused. Everything this shell had started was killed; the shell keeps its cwd and variables.]"
        )

    def _sweep(self, shell: ShellSession) -> bytes:
        """Kill everything the shell started; what they wrote before dying."""
        self.shells.kill_session(shell.pid)
        return shell.drain(DRAIN_QUIET_S)

    def _hit_process_limit(self, shell: ShellSession, framed: Framed) -> bool:
        """Did the process limit refuse forks during the command? A job it left in the
        background (a fork bomb returns at once) gets up to FORK_SETTLE_S to show it."""
        failures = framed.fork_failures
        if framed.last_background != shell.last_background:
            shell.last_background = framed.last_background
            self.background = True
            deadline = time.monotonic() + FORK_SETTLE_S
            while failures <= self.forks_refused and time.monotonic() < deadline:
                time.sleep(0.05)
                failures = self._refused_now()
        return failures > self.forks_refused

    def _refused_now(self) -> int:
        """The container's count of refused forks, read by builtins of the control shell."""
        try:
            return self.shells.counters().fork_failures
        except (ShellExited, APIError):
            self.shells.forget_control()
            return self.forks_refused

    def _workspace_full(self) -> bool:
        """Less than 1 MiB left in the workspace (the full disk may be another one, /tmp say)."""
        r = self.shells.control().run_framed(
            f"stat -f -c '%a %S' {shlex.quote(self.options.workdir)}", timeout=10, cap=256
        )
        free, block = (int(x) for x in r.output.split()) if r.exit_code == 0 else (0, 0)
        return free * block < 1 << 20


def container_state(api, container_id: str) -> dict:
    # A short timeout of its own: a hung engine makes alive() say no, not hang.
    res = api._get(api._url("/containers/{0}/json", container_id), timeout=PROBE_TIMEOUT_S)
    return api._result(res, True)["State"]


def check_running(client: docker.DockerClient, container_id: str, what: str, seen_running: float, doing: str) -> None:
    """Return when the container runs; otherwise raise SandboxDead saying what happened to `what`
    while `doing`. `seen_running`: when it was last known to run (epoch seconds)."""
    try:
        state = container_state(client.api, container_id)
    except NotFound:
        raise SandboxDead(f"{what} was removed while {doing}") from None
    except (DockerException, OSError) as e:
        raise SandboxDead(f"the Docker engine stopped answering while {doing} in {what}: {e}") from e
    if state.get("Running"):
        return
    # The OOMKilled flag stays set for the container's whole life once anything in it was
    # killed for memory: only an out-of-memory event since it was last seen running counts.
    oom = state.get("OOMKilled") and _oom_since(client, container_id, seen_running)
    why = "it ran out of memory" if oom else "it was killed or stopped from outside or by its own processes"
    raise SandboxDead(
        f"{what} stopped while {doing}: {why} (status {state.get('Status')}, exit code {state.get('ExitCode')}, "
        f"finished {state.get('FinishedAt')})"
    )


def _oom_since(client: docker.DockerClient, container_id: str, t: float) -> bool:
    """Did the engine report an out-of-memory kill in this container since `t` (epoch seconds)?
    It waits for the next whole second: the engine may report the event just after the kill."""
    try:
        events = client.events(
            since=f"{int(t)}.{int(t % 1 * 1e9):09d}",
            until=f"{int(time.time()) + 1}",
            filters={"container": container_id, "event": "oom"},
            decode=True,
        )
        try:
            return next(iter(events), None) is not None
        finally:
            events.close()
    except (DockerException, OSError):
        return False
