"""The Docker sandbox: one locked-down container per run, driven through a persistent shell.

    sandbox = DockerSandbox.start(DockerOptions(image="harness-base:bookworm-1"))
    sandbox.exec("cd repo && export X=1", timeout=30)   # cwd and X persist
    sandbox.write_file("repo/a.bin", b"\\x00\\xff")
    sandbox.close()

Safe by default (see DockerOptions): no network, uid 1000, all capabilities
dropped, no-new-privileges, pids/memory/CPU limits, read-only root with a
writable /workspace volume and a /tmp tmpfs, and an environment that holds only
what the options name. The container's own processes (its init and idle process) run as
another user (docker_container.IDLE_USER), so the agent's `kill -9 -1` cannot end it. This file holds the container's life and the Sandbox API; how
the container is made is docker_container.py, its shells docker_shells.py, the notes on
its limits docker_diagnosis.py, and its files docker_files.py.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import threading
import time

import docker
from docker.errors import DockerException, NotFound

from core.interrupts import Abandoned, abandoning, requested
from sandboxes import docker_files
from sandboxes.base import FILE_TIMEOUT_S, ExecResult, SandboxDead, shell_replaced
from sandboxes.docker_attached import DockerAttached
from sandboxes.docker_container import (
    IDLE_UID,
    chown_workdir,
    create_container,
    docker_client,
    fill_workdir,
    numeric_user,
)
from sandboxes.docker_diagnosis import Limits, check_running, container_state
from sandboxes.docker_options import DockerOptions
from sandboxes.docker_shells import Shells, ShellState, exported
from sandboxes.shell import ShellExited, ShellSession
from sandboxes.text import as_text

log = logging.getLogger("harness.sandbox")

# After a timeout's kill, how long the shell gets to print its end marker
# before it is judged stuck (a loop of builtins) and replaced.
KILL_GRACE_S = 1.0
# How long a shell killed by a signal waits for the engine to say whether the container died too.
SETTLE_S = 1.0


class DockerSandbox:
    """A container with a persistent shell; implements sandboxes.base.Sandbox."""

    def __init__(self, client: docker.DockerClient, container, options: DockerOptions):
        self.client = client
        self.api = client.api
        self.container = container
        self.options = options
        self.workdir = options.workdir
        self.name = container.name
        self._closed = False
        self.owns_client = False  # one `start` made for it: closed with the sandbox
        self._seen_running = time.time()  # when the container was last known to run
        self.shells = Shells(self.api, container.id, options, self.raise_if_dead)
        self.limits = Limits(self.shells, options)
        # One shell, one conversation at a time: parallel tool calls take turns.
        self._lock = threading.RLock()
        self._uid, self._gid = numeric_user(options.user)

    @property
    def container_id(self) -> str:
        return self.container.id

    @classmethod
    def start(
        cls,
        options: DockerOptions | None = None,
        *,
        client: docker.DockerClient | None = None,
        name: str | None = None,
        run_dir: str | os.PathLike | None = None,
        image: str | None = None,
    ) -> DockerSandbox:
        """Start a container from `image` (default `options.image`; it must be local) and open its shell.

        `run_dir` (the run's folder) goes on the container as the label `harness.run_dir`, so
        the run's container can be found again (sandboxes.docker_runs.reattach) and is pruned
        only once no process holds that run."""
        opts = options or DockerOptions()
        own = client is None
        client = client or docker_client()
        try:
            container = create_container(client, opts, image or opts.image, name, run_dir)
        except BaseException:
            if own:
                client.close()
            raise
        sandbox = cls(client, container, opts)
        sandbox.owns_client = own
        try:
            container.start()
            if opts.disk:
                fill_workdir(client, container, opts)
            sandbox._open_shells()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    @classmethod
    def adopt(cls, client: docker.DockerClient, container, options: DockerOptions, state: ShellState) -> DockerSandbox:
        """Take over a running container whose owner is gone: end what its old shells were still
        running, and open a fresh shell in `state.cwd` with `state.env` exported.
        On failure the container is left as it is: only the caller knows whether to drop it."""
        sandbox = cls(client, container, options)
        shells = sandbox.shells
        try:
            for pid in shells.control().run_framed("__h_old_shells", timeout=15, cap=65536).output.split():
                # The shell first: once its command is killed, it would run the rest of its line.
                shells.kill_pid(int(pid))
                shells.kill_session(int(pid))
            sandbox.restore(state)
        except BaseException:
            sandbox._closed = True
            shells.close()
            raise
        return sandbox

    def restore(self, state: ShellState) -> None:
        """Continue in a fresh shell at `state.cwd` (the workdir if that is gone) with `state.env` exported."""
        bad = [k for k in state.env if not k.isidentifier() or not k.isascii()]
        if bad:
            raise ValueError(f"cannot export {bad}: not shell variable names")
        with self._lock:
            self.shells.drop()
            self.shells.cwd = state.cwd
            self._open_shells()
            if state.env:
                command = "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in state.env.items())
                r = self.exec(command, timeout=60)
                if r.exit_code != 0:
                    raise OSError(f"sandbox file operation failed ({r.exit_code}): {command}: {r.output.strip()}")

    def shell_state(self) -> ShellState:
        """The shell's cwd and the variables its commands exported (those that differ from the
        container's own environment): what a resumed run passes to `sandboxes.docker_runs.reattach`."""
        with self._lock:
            shell = self.shells.ready()
            framed = shell.run_framed("env -0", timeout=30, cap=self.options.output_cap)
            if framed.exit_code != 0:
                raise OSError(f"could not read the shell's environment in {self.name}: {framed.output[-500:]!r}")
            self.shells.cwd = shell.cwd or self.shells.cwd
            return ShellState(self.shells.cwd, exported(framed.output, self.container.attrs["Config"]["Env"]))

    # -- commands ---------------------------------------------------------------

    def exec(self, command: str, timeout: float) -> ExecResult:
        """Run `command` in the persistent shell. On timeout it returns within ms of the
        deadline, or KILL_GRACE_S later when the shell itself was stuck and is replaced."""
        with self._lock:
            return self._exec(command, timeout)

    def _exec(self, command: str, timeout: float) -> ExecResult:
        if self._closed:
            raise SandboxDead(f"sandbox {self.name} was closed")
        start = time.monotonic()
        shell = self.shells.ready()
        before = self.limits.before_command(shell)
        try:
            framed = shell.run_framed(command, timeout, self.options.output_cap, stop=abandoning)
        except ShellExited:
            return self._after_exit(shell, command, start)
        except BaseException:  # a KeyboardInterrupt raised anywhere: the shell must not go on mid-command
            self._lose(shell)
            raise
        if framed.exit_code is None and abandoning() and requested():
            self._abandon(shell, command, start)
            raise Abandoned(requested() or "")
        if framed.exit_code is None:
            return self._after_timeout(shell, command, start)
        self.shells.cwd = shell.cwd or self.shells.cwd
        self._seen_running = time.time()
        output, note = self.limits.after_command(shell, framed)
        return ExecResult(
            output=as_text(output) + before + note,
            exit_code=framed.exit_code,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    def _after_exit(self, shell: ShellSession, command: str, start: float) -> ExecResult:
        """The shell ended mid-command: either the container died, or the command ran `exit`."""
        self.shells.drop()
        doing = f"running {command[:200]!r}"
        self.raise_if_dead(doing)
        code = shell.exit_code()
        if code is None or code >= 128:
            # Killed by a signal: when the whole container is being killed, the exec's
            # stream ends a moment before the engine marks the container stopped.
            deadline = time.monotonic() + SETTLE_S
            while time.monotonic() < deadline:
                time.sleep(0.05)
                self.raise_if_dead(doing)
            code = shell.exit_code()
        framed = shell.partial()
        how = f"was killed (signal {code - 128})" if code is not None and code > 128 else f"exited with status {code}"
        if replaces_shell(command):
            how = f"was replaced by the program the command `exec`s, which {how.replace('was', 'was then')}"
        note = shell_replaced(f"the shell {how}", self.shells.cwd)
        return ExecResult(
            output=as_text(framed.output) + self.limits.after_sweep() + note,
            exit_code=code if code is not None else -1,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    def _after_timeout(self, shell: ShellSession, command: str, start: float) -> ExecResult:
        """Kill everything the command started; keep the shell if it comes back, else replace it."""
        framed, note = None, ""
        try:
            self.shells.kill_session(shell.pid)
            framed = shell.resume(time.monotonic() + KILL_GRACE_S)
        except ShellExited:
            self.shells.forget_control()  # opened afresh when next needed
        if framed is None:
            # Stuck in a loop of builtins (or its stream broke): start afresh next time.
            framed = shell.partial()
            self.shells.kill_pid(shell.pid)
            self.shells.drop()
            self.raise_if_dead(f"running {command[:200]!r}")
            busy = (
                "the program the command `exec`s in the shell's place was still running at the timeout and was killed"
                if replaces_shell(command)
                else "the shell itself was still busy at the timeout and was killed"
            )
            note = shell_replaced(busy, self.shells.cwd)
        return ExecResult(
            output=as_text(framed.output) + self.limits.after_sweep() + note,
            exit_code=None,
            timed_out=True,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    def _abandon(self, shell: ShellSession, command: str, start: float) -> None:
        """Stop a command nobody waits for any more, as a timeout does: its end marker then passes, so the
        shell's next command (a snapshot's `env -0`) reads its own output, not this one's."""
        try:
            self._after_timeout(shell, command, start)
        except BaseException:
            self.shells.drop()
            raise

    def _lose(self, shell: ShellSession) -> None:
        """After an exception raised in the middle of reading the shell (a KeyboardInterrupt), its stream may be
        cut inside a frame: end what it runs, and the next command gets a new shell."""
        try:
            self.shells.kill_session(shell.pid)
            self.shells.kill_pid(shell.pid)
        finally:
            self.shells.drop()

    def attach(self, argv: list[str]) -> DockerAttached:
        """`argv` on an exec of its own in the workdir, on the container's network (none by default)."""
        with self._lock:
            if self._closed:
                raise SandboxDead(f"sandbox {self.name} was closed")
            self.raise_if_dead(f"starting {argv[0]}")
        return DockerAttached(self.api, self.container.id, argv, self.options.user, self.workdir, self._end_attached)

    def _end_attached(self, pid: int) -> None:
        """Kill an attached process and whatever it started, unless the container is already gone."""
        with self._lock:
            if self._closed:
                return
            try:
                self.shells.kill_pid(pid)
                self.shells.kill_session(pid)
            except (ShellExited, DockerException, OSError):
                self.shells.forget_control()

    # -- files ------------------------------------------------------------------

    def write_file(self, path: str, data: bytes, timeout: float = FILE_TIMEOUT_S) -> None:
        with self._lock:
            docker_files.write_file(self.shells, path, data, (self._uid, self._gid), timeout)

    def read_file(self, path: str, timeout: float = FILE_TIMEOUT_S) -> bytes:
        with self._lock:
            return docker_files.read_file(self.shells, path, timeout)

    # -- liveness ---------------------------------------------------------------

    def alive(self) -> bool:
        if self._closed:
            return False
        try:
            return bool(container_state(self.api, self.container.id)["Running"])
        except (DockerException, OSError):
            return False

    def raise_if_dead(self, doing: str) -> None:
        """Raise SandboxDead, saying what happened, when the container no longer runs."""
        what = f"container {self.name} ({self.options.image})"
        check_running(self.client, self.container.id, what, self._seen_running, doing)
        self._seen_running = time.time()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True  # set before the lock: a command in flight ends when its container goes
        self.shells.close()
        try:
            self.container.remove(force=True, v=True)
        except NotFound:
            pass
        except (DockerException, OSError) as e:
            # close() runs in `finally` blocks: it must not hide the error that got there.
            # The label lets `harness sandbox prune` remove the container later.
            if "already in progress" not in str(e):
                log.warning("could not remove sandbox container %s (%s); `harness sandbox prune` will", self.name, e)
        if self.owns_client:
            self.client.close()

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open_shells(self) -> None:
        self.shells.ready()
        self.limits.baseline()
        if self._uid is None:
            r = self.exec("id -u; id -g", timeout=10)
            self._uid, self._gid = (int(x) for x in r.output.split())
        if self._uid == IDLE_UID:
            raise ValueError(
                f"the sandbox user {self.options.user} has uid {IDLE_UID}, the uid the container's own processes "
                "run as, so its commands could end the container; choose another DockerOptions.user"
            )
        if self.exec(f"test -w {shlex.quote(self.workdir)}", timeout=10).exit_code != 0:
            chown_workdir(self.client, self.container, self.options, self._uid, self._gid)


def replaces_shell(command: str) -> bool:
    """Whether `command` runs `exec PROGRAM`, which puts another program in the shell's place (a bare
    `exec` with redirections only changes the command's own output: sandboxes.shell)."""
    return re.search(r"(^|[;&|({\s])exec\s+(-[acl]+\s+)*[^\s<>&|;{0-9-]", command) is not None


def factory(options: DockerOptions | None = None):
    """A sandbox factory for `RunSpec.sandbox`: files live in the container; the run's
    workspace folder only names the run (its parent is the run folder the container is labelled with)."""

    def make(workspace) -> DockerSandbox:
        return DockerSandbox.start(options, run_dir=os.path.dirname(os.path.abspath(workspace)))

    make.kind = "docker"  # type: ignore[attr-defined]  # what run.json records for a factory's sandbox
    return make
