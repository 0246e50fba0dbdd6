"""The Docker sandbox: one locked-down container per run, driven through a persistent shell.

    sandbox = DockerSandbox.start(DockerOptions(image="harness-base:bookworm-1"))
    sandbox.exec("cd repo && export X=1", timeout=30)   # cwd and X persist
    sandbox.write_file("repo/a.bin", b"\\x00\\xff")
    sandbox.close()

Safe by default (see DockerOptions): no network, uid 1000, all capabilities
dropped, no-new-privileges, pids/memory/CPU limits, read-only root with a
writable /workspace volume and a /tmp tmpfs, and an environment that holds only
what the options name. Nothing is ever pulled: the image must be local.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import posixpath
import shlex
import socket
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import docker
from docker.errors import (
    APIError,
    ContainerError,
    DockerException,
    ImageNotFound,
    NotFound,
)
from docker.types import DriverConfig, Mount
from docker.utils import parse_bytes

from sandboxes.base import ExecResult, SandboxDead
from sandboxes.docker_options import LABEL, OPTIONS_LABEL, RUN_LABEL, DockerOptions
from sandboxes.shell import KILL_SESSION, ShellExited, ShellSession

log = logging.getLogger("harness.sandbox")

# After a timeout's kill, how long the shell gets to print its end marker
# before it is judged stuck (a loop of builtins) and replaced.
KILL_GRACE_S = 1.0
# How long a shell killed by a signal waits for the engine to say whether the container died too.
SETTLE_S = 1.0
PROBE_TIMEOUT_S = 5.0
# After a kill, how long to wait for the dead to be reaped (a fork bomb's zombies hold the pids limit).
REAP_WAIT_S = 3.0
# A command that leaves a job in the background gets this long to show whether it is a fork bomb.
FORK_SETTLE_S = 0.5
DRAIN_QUIET_S = 0.2
FILE_TIMEOUT_S = 60.0
READ_CAP = 64 << 20  # read_file refuses larger files: they would not fit a model's context anyway
# Variables bash or the engine set themselves: not part of what a run exported.
SHELL_OWN_VARS = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "HOSTNAME"})


@dataclass(frozen=True)
class ShellState:
    """What a fresh shell needs to continue where an old one stopped."""

    cwd: str
    env: dict[str, str] = field(default_factory=dict)  # exported by the run's commands


class DockerUnavailable(RuntimeError):
    """No Docker engine answers, or the image the options name is not there."""


def docker_client(timeout: float = 60) -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except DockerException as e:
        raise DockerUnavailable(
            f"no Docker engine answers ({e}); start one with `bash scripts/setup.d/10-docker.sh` "
            "(as root) or `sudo dockerd &`, or set DOCKER_HOST"
        ) from e


def _tar_one(name: str, data: bytes, mode: int, uid: int | None, gid: int | None) -> bytes:
    """One file as a tar archive; an unknown owner (a user named, not numbered) stays root's until moved."""
    buf = io.BytesIO()
    # GNU format keeps names as raw bytes, so non-UTF-8 names survive (surrogateescape).
    with tarfile.open(
        fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        info.uid, info.gid = uid or 0, gid or 0
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


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
        self._shell: ShellSession | None = None
        self._control: ShellSession | None = None
        self._cwd = options.workdir  # where a restarted shell begins
        self._fork_failures = -1  # refused forks counted so far (the baseline for the next command)
        self._oom_kills = -1  # processes killed for memory so far
        self._seen_running = time.time()  # when the container was last known to run
        self._background = False  # jobs an earlier command put in the background may still run
        # One shell, one conversation at a time: parallel tool calls take turns.
        self._lock = threading.RLock()
        self._uid, self._gid = _numeric_user(options.user)

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
        client = client or docker_client()
        image = image or opts.image
        try:
            client.images.get(image)
        except ImageNotFound:
            raise DockerUnavailable(
                f"image {image!r} is not on this Docker engine and nothing is pulled; "
                "build the base image with `harness sandbox build`, or name a local image"
            ) from None
        labels = run_labels(opts, run_dir)
        container = client.containers.create(
            image, name=name or f"harness-{uuid.uuid4().hex[:12]}", **_run_kwargs(opts, labels)
        )
        sandbox = cls(client, container, opts)
        try:
            container.start()
            if opts.disk:
                sandbox._fill_workdir()
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
        try:
            control = sandbox._control_shell()
            for pid in control.run_framed("__h_old_shells", timeout=15, cap=65536).output.split():
                # The shell first: once its command is killed, it would run the rest of its line.
                sandbox._kill_pid(int(pid))
                sandbox._kill_session(int(pid))
            sandbox.restore(state)
        except BaseException:
            sandbox._closed = True
            sandbox._close_shells()
            raise
        return sandbox

    def restore(self, state: ShellState) -> None:
        """Continue in a fresh shell at `state.cwd` (the workdir if that is gone) with `state.env` exported."""
        bad = [k for k in state.env if not k.isidentifier() or not k.isascii()]
        if bad:
            raise ValueError(f"cannot export {bad}: not shell variable names")
        with self._lock:
            self._drop_shell()
            self._cwd = state.cwd
            self._open_shells()
            if state.env:
                self._shell_ok("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in state.env.items()))

    def shell_state(self) -> ShellState:
        """The shell's cwd and the variables its commands exported (those that differ from the
        container's own environment): what a resumed run passes to `sandboxes.docker_runs.reattach`."""
        with self._lock:
            shell = self._ready_shell()
            framed = shell.run_framed("env -0", timeout=30, cap=self.options.output_cap)
            if framed.exit_code != 0:
                raise OSError(f"could not read the shell's environment in {self.name}: {framed.output[-500:]!r}")
            self._cwd = shell.cwd or self._cwd
            base = dict(item.partition("=")[::2] for item in self.container.attrs["Config"]["Env"] or [])
            env = {}
            for item in framed.output.decode("utf-8", "surrogateescape").split("\0"):
                name, eq, value = item.partition("=")
                if eq and name not in SHELL_OWN_VARS and base.get(name) != value:
                    env[name] = value
            return ShellState(cwd=self._cwd, env=env)

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
        shell = self._ready_shell()
        before = self._background_hit_limit(shell)
        try:
            framed = shell.run_framed(command, timeout, self.options.output_cap)
        except ShellExited:
            return self._after_exit(shell, command, start)
        if framed.exit_code is None:
            return self._after_timeout(shell, command, start)
        self._cwd = shell.cwd or self._cwd
        self._seen_running = time.time()
        output, note = framed.output, before
        if framed.oom_kills > self._oom_kills >= 0:
            note += f"\n[sandbox: a process was killed for going over the memory limit ({self.options.memory})]"
        self._oom_kills = max(self._oom_kills, framed.oom_kills)
        if self._hit_process_limit(shell, framed):
            self._kill_session(shell.pid)
            self._background = False
            output = (output + shell.drain(DRAIN_QUIET_S))[: self.options.output_cap]  # what the killed wrote late
            note += self._limit_note()
        if b"No space left on device" in output and self.options.disk and self._workspace_full():
            note += f"\n[sandbox: the workspace {self.workdir} is full: its quota is {self.options.disk}; delete files to make room]"
        return ExecResult(
            output=output.decode("utf-8", "replace") + note,
            exit_code=framed.exit_code,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    def _workspace_full(self) -> bool:
        """Less than 1 MiB left in the workspace (the full disk may be another one, /tmp say)."""
        r = self._control_shell().run_framed(f"stat -f -c '%a %S' {shlex.quote(self.workdir)}", timeout=10, cap=256)
        free, block = (int(x) for x in r.output.split()) if r.exit_code == 0 else (0, 0)
        return free * block < 1 << 20

    def _hit_process_limit(self, shell: ShellSession, framed) -> bool:
        """Did the process limit refuse forks during the command? A job it left in the
        background (a fork bomb returns at once) gets up to FORK_SETTLE_S to show it."""
        failures = framed.fork_failures
        if framed.last_background != shell.last_background:
            shell.last_background = framed.last_background
            self._background = True
            deadline = time.monotonic() + FORK_SETTLE_S
            while failures <= self._fork_failures and time.monotonic() < deadline:
                time.sleep(0.05)
                failures = self._fork_failures_now()
        return failures > self._fork_failures

    def _after_sweep_note(self) -> str:
        self._background = False  # the sweep ended every job of the shell
        return self._limit_note()

    def _background_hit_limit(self, shell: ShellSession) -> str:
        """Before a command, while jobs of earlier ones may run: if they hit the process limit
        since, end everything the shell started, so this command starts clean, and say so."""
        if not self._background or self._fork_failures_now() <= self._fork_failures:
            return ""
        self._kill_session(shell.pid)
        shell.drain(DRAIN_QUIET_S)  # their late output belongs to no command
        self._background = False
        return self._limit_note(since_last=True)

    def _fork_failures_now(self) -> int:
        """The container's count of refused forks, read by builtins of the control shell."""
        try:
            return self._control_shell().run_framed("true", timeout=10, cap=64).fork_failures
        except (ShellExited, APIError):
            self._control = None
            return self._fork_failures

    def _limit_note(self, since_last: bool = False) -> str:
        """After a sweep: say so if forks were refused since the last look, and take a new baseline."""
        now = self._fork_failures_now()
        refused, self._fork_failures = now - self._fork_failures, max(now, self._fork_failures)
        if refused <= 0:
            return ""
        return (
            f"\n[sandbox: {'since the last command, ' if since_last else ''}the process limit ({self.options.pids} processes) "
            f"was reached: {refused} process creations were "
            "refused. Everything this shell had started was killed; the shell keeps its cwd and variables.]"
        )

    def _after_exit(self, shell: ShellSession, command: str, start: float) -> ExecResult:
        """The shell ended mid-command: either the container died, or the command ran `exit`."""
        self._drop_shell()
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
        note = f"\n[sandbox: the shell exited with status {code}; the next command starts a new shell in {self._cwd}]"
        note = self._limit_note() + note
        self._background = False
        return ExecResult(
            output=framed.output.decode("utf-8", "replace") + note,
            exit_code=code if code is not None else -1,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    def _after_timeout(self, shell: ShellSession, command: str, start: float) -> ExecResult:
        """Kill everything the command started; keep the shell if it comes back, else replace it."""
        framed = None
        try:
            self._kill_session(shell.pid)
            framed = shell.resume(time.monotonic() + KILL_GRACE_S)
        except ShellExited:
            self._control = None  # opened afresh when next needed
        if framed is None:
            # Stuck in a loop of builtins (or its stream broke): start afresh next time.
            framed = shell.partial()
            self._kill_pid(shell.pid)
            self._drop_shell()
            self.raise_if_dead(f"running {command[:200]!r}")
        return ExecResult(
            output=framed.output.decode("utf-8", "replace") + self._after_sweep_note(),
            exit_code=None,
            timed_out=True,
            output_capped=framed.capped,
            duration_s=time.monotonic() - start,
        )

    # -- files ------------------------------------------------------------------
    # Both directions run in the control shell: a clean shell of the sandbox user that the
    # run's commands never touch (no functions or variables of theirs), so a file tool has
    # exactly the shell's permissions. Only the bytes of a write travel through the archive
    # API (as root) to a fresh name in the workdir; the user's `cat` copies them into place,
    # which also keeps an existing file's mode.

    def write_file(self, path: str, data: bytes) -> None:
        with self._lock:
            target = self._abs(path)
            stage = self._stage_name()
            self._put_stage(stage, data)
            src, dst, parent = shlex.quote(stage), shlex.quote(target), shlex.quote(posixpath.dirname(target))
            self._file_op(
                f"mkdir -p -- {parent} && cat -- {src} > {dst}; __h_rc=$?; rm -f -- {src}; (exit $__h_rc)",
                target,
                "write",
                cap=65536,
            )

    def read_file(self, path: str) -> bytes:
        with self._lock:
            target = shlex.quote(self._abs(path))
            # On failure cat runs again for its message alone: the first one's stderr would mix with the bytes.
            return self._file_op(
                f"if [ -d {target} ]; then echo 'Is a directory' >&2; (exit 21); elif cat -- {target} 2>/dev/null; then :; "
                f"else LC_ALL=C cat -- {target} 2>&1 >/dev/null; (exit 1); fi",
                self._abs(path),
                "read",
                cap=READ_CAP + 1,
            )

    def _file_op(self, command: str, target: str, verb: str, cap: int) -> bytes:
        control = self._control_shell()
        try:
            framed = control.run_framed(command, timeout=FILE_TIMEOUT_S, cap=cap)
        except ShellExited:
            self._control = None
            self.raise_if_dead(f"{verb}ing {target!r}")
            raise OSError(f"cannot {verb} {target}: the sandbox's file shell ended; try again") from None
        if framed.exit_code is None:  # a FIFO, or a device that never ends
            self._control = None
            self._kill_pid(control.pid)
            self._kill_session(control.pid)
            raise TimeoutError(
                f"cannot {verb} {target}: it did not finish within {FILE_TIMEOUT_S:.0f} s (a pipe or device?)"
            )
        if framed.exit_code == 0:
            if len(framed.output) > READ_CAP:
                raise OSError(
                    errno.EFBIG,
                    f"{target} is larger than {READ_CAP >> 20} MiB; read parts of it with the shell (head, sed -n)",
                )
            return framed.output
        raise self._file_error(framed.output.decode("utf-8", "replace").strip()[-400:], target, verb)

    def _file_error(self, message: str, target: str, verb: str) -> OSError:
        as_user = f"as the sandbox user ({self.options.user})"
        if "No such file" in message:
            return FileNotFoundError(errno.ENOENT, f"{target} does not exist", target)
        if "Read-only file system" in message:
            return PermissionError(
                errno.EROFS,
                f"cannot write {target}: it is on the read-only root filesystem; write under {self.workdir} or /tmp",
            )
        if "Permission denied" in message:
            return PermissionError(errno.EACCES, f"cannot {verb} {target} {as_user}: permission denied", target)
        if "No space left" in message:
            return OSError(
                errno.ENOSPC,
                f"cannot write {target}: the workspace is full (quota {self.options.disk}); delete files to make room",
            )
        if "Is a directory" in message:
            return IsADirectoryError(errno.EISDIR, f"{target} is a directory", target)
        if "Not a directory" in message:
            return NotADirectoryError(errno.ENOTDIR, f"a parent of {target} is not a directory", target)
        return OSError(f"cannot {verb} {target} {as_user}: {message}")

    def _put_stage(self, stage: str, data: bytes) -> None:
        parent, name = posixpath.split(stage)
        try:
            self.api.put_archive(
                self.container.id, os.fsencode(parent), _tar_one(name, data, 0o600, self._uid, self._gid)
            )
        except NotFound:
            self.raise_if_dead(f"writing {stage!r}")
            raise
        except APIError as e:
            if "no space left" in str(e).lower():
                raise OSError(
                    errno.ENOSPC, f"the workspace is full (quota {self.options.disk}): no room for {len(data)} bytes"
                ) from e
            raise

    def _shell_ok(self, command: str, missing: str | None = None) -> None:
        r = self.exec(command, timeout=60)
        if r.exit_code == 2 and missing:
            raise FileNotFoundError(missing)
        if r.exit_code != 0:
            raise OSError(f"sandbox file operation failed ({r.exit_code}): {command}: {r.output.strip()}")

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _stage_name(self) -> str:
        return posixpath.join(self.workdir, f".harness-transfer-{uuid.uuid4().hex}")

    # -- liveness ---------------------------------------------------------------

    def alive(self) -> bool:
        if self._closed:
            return False
        try:
            return bool(self._state()["Running"])
        except (DockerException, OSError):
            return False

    def _state(self) -> dict:
        # A short timeout of its own: a hung engine makes alive() say no, not hang.
        res = self.api._get(self.api._url("/containers/{0}/json", self.container.id), timeout=PROBE_TIMEOUT_S)
        return self.api._result(res, True)["State"]

    def raise_if_dead(self, doing: str) -> None:
        """Raise SandboxDead, saying what happened, when the container no longer runs."""
        what = f"container {self.name} ({self.options.image})"
        try:
            state = self._state()
        except NotFound:
            raise SandboxDead(f"{what} was removed while {doing}") from None
        except (DockerException, OSError) as e:
            raise SandboxDead(f"the Docker engine stopped answering while {doing} in {what}: {e}") from e
        if state.get("Running"):
            self._seen_running = time.time()
            return
        # The OOMKilled flag stays set for the container's whole life once anything in it was
        # killed for memory: only an out-of-memory event since it was last seen running counts.
        oom = state.get("OOMKilled") and self._oom_since(self._seen_running)
        why = "it ran out of memory" if oom else "it was killed or stopped from outside or by its own processes"
        raise SandboxDead(
            f"{what} stopped while {doing}: {why} (status {state.get('Status')}, exit code {state.get('ExitCode')}, "
            f"finished {state.get('FinishedAt')})"
        )

    def _oom_since(self, t: float) -> bool:
        """Did the engine report an out-of-memory kill in this container since `t` (epoch seconds)?
        It waits for the next whole second: the engine may report the event just after the kill."""
        try:
            events = self.client.events(
                since=f"{int(t)}.{int(t % 1 * 1e9):09d}",
                until=f"{int(time.time()) + 1}",
                filters={"container": self.container.id, "event": "oom"},
                decode=True,
            )
            try:
                return next(iter(events), None) is not None
            finally:
                events.close()
        except (DockerException, OSError):
            return False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True  # set before the lock: a command in flight ends when its container goes
        self._close_shells()
        try:
            self.container.remove(force=True, v=True)
        except NotFound:
            pass
        except (DockerException, OSError) as e:
            # close() runs in `finally` blocks: it must not hide the error that got there.
            # The label lets `harness sandbox prune` remove the container later.
            if "already in progress" not in str(e):
                log.warning("could not remove sandbox container %s (%s); `harness sandbox prune` will", self.name, e)

    def _close_shells(self) -> None:
        for s in (self._shell, self._control):
            if s is not None:
                s.close()
        self._shell = self._control = None

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- shells -----------------------------------------------------------------

    def _open_shells(self) -> None:
        self._ready_shell()
        baseline = self._control_shell().run_framed("true", timeout=10, cap=64)
        self._fork_failures, self._oom_kills = baseline.fork_failures, baseline.oom_kills
        if self._uid is None:
            r = self.exec("id -u; id -g", timeout=10)
            self._uid, self._gid = (int(x) for x in r.output.split())
        if self.exec(f"test -w {shlex.quote(self.workdir)}", timeout=10).exit_code != 0:
            self._chown_workdir()

    def _fill_workdir(self) -> None:
        """A tmpfs volume starts empty when its container starts (the engine's own copy of the
        image's files goes into a mount it then drops): copy the image's workdir into it, owners
        and modes kept, with a short-lived root helper that has only what `cp -a` needs."""
        self.container.reload()
        volume = next(m["Name"] for m in self.container.attrs["Mounts"] if m["Destination"] == self.workdir)
        try:
            self.client.containers.run(
                self.container.image.id,
                entrypoint=["sh", "-c", '[ ! -d "$1" ] || cp -a "$1"/. /.harness-into/', "fill", self.workdir],
                command=[],
                user="0",
                mounts=[Mount("/.harness-into", volume, type="volume")],
                network_mode="none",
                cap_drop=["ALL"],
                cap_add=["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"],
                security_opt=["no-new-privileges"],
                labels={**_labels(self.options), "harness.helper": "fill"},
                remove=True,
            )
        except ContainerError as e:
            last = (e.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            image = (self.container.image.tags or [self.options.image])[0]
            raise DockerUnavailable(
                f"the files {image} has in {self.workdir} could not be copied into the sandbox's workspace of "
                f"{self.options.disk} ({last[0][-200:]}); raise DockerOptions.disk"
            ) from e

    def _chown_workdir(self) -> None:
        """An image without the workdir (or with a root-owned one) gives a volume the sandbox
        user cannot write: hand it, and whatever the image put in it, to that user.

        A short-lived helper container that shares the volume does it, with CAP_CHOWN
        only, so the sandbox itself never holds that capability."""
        self.client.containers.run(
            self.options.image,
            entrypoint=["chown", "-R", f"{self._uid}:{self._gid}", self.workdir],
            command=[],
            user="0",
            volumes_from=[self.container.id],
            network_mode="none",
            cap_drop=["ALL"],
            cap_add=["CHOWN"],
            security_opt=["no-new-privileges"],
            labels={**_labels(self.options), "harness.helper": "chown"},
            remove=True,
        )

    def _new_session(self, workdir: str) -> ShellSession:
        try:
            return ShellSession(self.api, self.container.id, self.options.shell, self.options.user, workdir)
        except (ShellExited, APIError) as e:
            self.raise_if_dead("starting a shell")
            raise ShellExited(
                f"cannot start the shell {' '.join(self.options.shell)} as user {self.options.user} in {workdir} "
                f"of image {self.options.image} ({e}); the image needs bash"
            ) from e

    def _ready_shell(self) -> ShellSession:
        if self._shell is not None:
            return self._shell
        self.raise_if_dead("starting a shell")
        try:
            self._shell = self._new_session(self._cwd)
        except ShellExited:
            if self._cwd == self.workdir:
                raise
            self._cwd = self.workdir  # the last cwd may be gone
            self._shell = self._new_session(self._cwd)
        return self._shell

    def _control_shell(self) -> ShellSession:
        if self._control is None:
            self._control = self._new_session(self.workdir)
            self._control.run_framed(KILL_SESSION, timeout=10, cap=4096)
        return self._control

    def _drop_shell(self) -> None:
        if self._shell is not None:
            self._shell.close()
            self._shell = None

    def _kill_session(self, pid: int | None) -> None:
        """Kill what the shell `pid` started, and wait (briefly) until their pids are free again."""
        control = self._control_shell()
        control.run_framed(f"__h_kill {pid}", timeout=15, cap=4096)
        deadline = time.monotonic() + REAP_WAIT_S
        while (
            control.run_framed(f"__h_left {pid}", timeout=5, cap=64).output not in (b"0", b"")
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)

    def _kill_pid(self, pid: int | None) -> None:
        if pid is None:
            return
        try:
            self._control_shell().run_framed(f"kill -KILL {pid} 2>/dev/null; true", timeout=10, cap=4096)
        except (ShellExited, APIError):
            self._control = None


def factory(options: DockerOptions | None = None):
    """A sandbox factory for `RunSpec.sandbox`: files live in the container; the run's
    workspace folder only names the run (its parent is the run folder the container is labelled with)."""

    def make(workspace) -> DockerSandbox:
        return DockerSandbox.start(options, run_dir=os.path.dirname(os.path.abspath(workspace)))

    make.kind = "docker"  # type: ignore[attr-defined]  # what run.json records for a factory's sandbox
    return make


def _numeric_user(user: str) -> tuple[int | None, int | None]:
    uid, _, gid = user.partition(":")
    if uid.isdigit() and (gid == "" or gid.isdigit()):
        return int(uid), int(gid or uid)
    return None, None


def _run_kwargs(opts: DockerOptions, labels: dict[str, str]) -> dict:
    env = dict(opts.env)
    env.update({k: os.environ[k] for k in opts.env_from_host if k in os.environ})
    return dict(
        # The image's own entrypoint and command are replaced: the container only idles.
        entrypoint=["sleep"],
        command=["infinity"],
        init=True,  # a real pid 1 that reaps orphans
        user=opts.user,
        working_dir=opts.workdir,
        environment=env,
        network_mode=opts.network,
        cap_drop=["ALL"],
        cap_add=opts.cap_add or None,
        security_opt=["no-new-privileges"] if opts.no_new_privileges else None,
        read_only=opts.read_only_root,
        tmpfs=dict(opts.tmpfs),
        mounts=[_workdir_mount(opts)],
        mem_limit=_memory_limit(opts),
        memswap_limit=_memory_limit(opts),
        nano_cpus=int(opts.cpus * 1e9),
        pids_limit=opts.pids,
        labels=labels,
    )


def _workdir_mount(opts: DockerOptions) -> Mount:
    """An anonymous volume, removed with the container; with a quota, a tmpfs of that size,
    which, unlike the engine's overlay on ext4, can be size-limited on any host (filled by
    `_fill_workdir`; an empty one belongs to the sandbox user when the user is numeric)."""
    if not opts.disk:
        return Mount(opts.workdir, None, type="volume")
    tmpfs = f"size={opts.disk}"
    uid, gid = _numeric_user(opts.user)
    if uid is not None:
        tmpfs += f",uid={uid},gid={gid},mode=0755"
    return Mount(
        opts.workdir,
        None,
        type="volume",
        no_copy=True,
        driver_config=DriverConfig("local", {"type": "tmpfs", "device": "tmpfs", "o": tmpfs}),
    )


def _memory_limit(opts: DockerOptions) -> int:
    """The workspace's tmpfs pages count against the container's memory: the limit covers both."""
    return parse_bytes(opts.memory) + (parse_bytes(opts.disk) if opts.disk else 0)


def _labels(opts: DockerOptions) -> dict[str, str]:
    return {
        **opts.labels,
        LABEL: "1",
        "harness.host": socket.gethostname(),
        "harness.pid": str(os.getpid()),
        "harness.started": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def run_labels(opts: DockerOptions, run_dir: str | os.PathLike | None) -> dict[str, str]:
    """A sandbox's labels: its owner, and, for a run's sandbox, the run's folder and the
    options, so the container can be found, reattached and recreated from them alone."""
    labels = _labels(opts)
    if run_dir is not None:
        labels[RUN_LABEL] = os.path.abspath(run_dir)
        labels[OPTIONS_LABEL] = opts.model_dump_json()
    return labels
