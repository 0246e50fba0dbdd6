"""Reading and writing files in a Docker sandbox with exactly the shell's permissions.

Both directions run in the control shell (docker_shells.py), as the sandbox user. Only the
bytes of a write travel through the archive API (as root, in a tar archive) to a fresh name
in the workdir; the user's `cat` copies them into place, which also keeps an existing
file's mode.
"""

from __future__ import annotations

import errno
import io
import os
import posixpath
import shlex
import tarfile
import time
import uuid

from docker.errors import APIError, NotFound

from sandboxes.base import READ_CAP, file_error, file_timeout
from sandboxes.docker_options import DockerOptions
from sandboxes.docker_shells import Shells
from sandboxes.shell import ShellExited


def read_file(shells: Shells, path: str, timeout: float) -> bytes:
    target = _abs(shells.options, path)
    quoted = shlex.quote(target)
    # On failure cat runs again for its message alone: the first one's stderr would mix with the bytes.
    return _file_op(
        shells,
        f"if [ -d {quoted} ]; then echo 'Is a directory' >&2; (exit 21); elif cat -- {quoted} 2>/dev/null; then :; "
        f"else LC_ALL=C cat -- {quoted} 2>&1 >/dev/null; (exit 1); fi",
        target,
        "reading",
        timeout,
        cap=READ_CAP + 1,
    )


def write_file(shells: Shells, path: str, data: bytes, owner: tuple[int | None, int | None], timeout: float) -> None:
    """`owner`: the sandbox user's uid and gid, who owns the staged bytes."""
    target = _abs(shells.options, path)
    stage = posixpath.join(shells.options.workdir, f".harness-transfer-{uuid.uuid4().hex}")
    _put_stage(shells, stage, data, owner, target)
    src, dst, parent = shlex.quote(stage), shlex.quote(target), shlex.quote(posixpath.dirname(target))
    try:
        _file_op(
            shells,
            f"mkdir -p -- {parent} && cat -- {src} > {dst}; __h_rc=$?; rm -f -- {src}; (exit $__h_rc)",
            target,
            "writing",
            timeout,
            cap=65536,
        )
    except TimeoutError:
        shells.control().run_framed(f"rm -f -- {src}", timeout=10, cap=4096)  # its cat was killed before its rm
        raise


def _abs(opts: DockerOptions, path: str) -> str:
    return posixpath.normpath(posixpath.join(opts.workdir, path))


def _file_op(shells: Shells, command: str, target: str, verb: str, timeout: float, cap: int) -> bytes:
    # A control shell that a command killed (kill -9 -1) may still look alive for a moment, until the
    # engine closes its stream: then the command never ran, and a fresh control shell runs it.
    for _ in range(2):
        control = shells.control()
        try:
            framed = control.run_framed(command, timeout=timeout, cap=cap)
            break
        except ShellExited:
            shells.forget_control()
            shells.raise_if_dead(f"{verb} {target!r}")
    else:
        raise OSError(f"cannot finish {verb} {target}: the sandbox's file shell ended twice")
    if framed.exit_code is None:  # a FIFO, or a device that never ends
        shells.forget_control()
        shells.kill_pid(control.pid)
        shells.kill_session(control.pid)
        raise file_timeout(verb, target, timeout, _mode(shells, target))
    if framed.exit_code == 0:
        if len(framed.output) > READ_CAP:
            raise OSError(
                errno.EFBIG,
                f"file too large: {target} (over {READ_CAP >> 20} MiB; read parts of it with the shell: head, sed -n)",
            )
        return framed.output
    raise file_error(framed.output.decode("utf-8", "replace").strip()[-400:], target, _hints(shells.options))


def _mode(shells: Shells, target: str) -> int | None:
    """The file's st_mode as the sandbox user sees it; None when stat cannot say."""
    r = shells.control().run_framed(f"stat -L -c %f -- {shlex.quote(target)}", timeout=5, cap=64)
    try:
        return int(r.output.strip(), 16) if r.exit_code == 0 else None
    except ValueError:
        return None


def _hints(opts: DockerOptions) -> dict[int, str]:
    """What to do about each error the sandbox's limits cause."""
    return {
        errno.EROFS: f"the root filesystem is read-only; write under {opts.workdir} or /tmp",
        errno.EACCES: f"the sandbox runs as user {opts.user}",
        errno.EPERM: f"the sandbox runs as user {opts.user}",
        errno.ENOSPC: f"the workspace is full: its quota is {opts.disk}; delete files to make room",
    }


def _put_stage(shells: Shells, stage: str, data: bytes, owner: tuple[int | None, int | None], target: str) -> None:
    parent, name = posixpath.split(stage)
    try:
        shells.api.put_archive(shells.container_id, os.fsencode(parent), _tar_one(name, data, 0o600, *owner))
    except NotFound:
        shells.raise_if_dead(f"writing {stage!r}")
        raise
    except APIError as e:
        if "no space left" in str(e).lower():
            raise file_error(os.strerror(errno.ENOSPC), target, _hints(shells.options)) from e
        raise


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
