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

from sandboxes.docker_options import DockerOptions
from sandboxes.docker_shells import Shells
from sandboxes.shell import ShellExited

FILE_TIMEOUT_S = 60.0
READ_CAP = 64 << 20  # read_file refuses larger files: they would not fit a model's context anyway


def read_file(shells: Shells, path: str) -> bytes:
    target = _abs(shells.options, path)
    quoted = shlex.quote(target)
    # On failure cat runs again for its message alone: the first one's stderr would mix with the bytes.
    return _file_op(
        shells,
        f"if [ -d {quoted} ]; then echo 'Is a directory' >&2; (exit 21); elif cat -- {quoted} 2>/dev/null; then :; "
        f"else LC_ALL=C cat -- {quoted} 2>&1 >/dev/null; (exit 1); fi",
        target,
        "read",
        cap=READ_CAP + 1,
    )


def write_file(shells: Shells, path: str, data: bytes, owner: tuple[int | None, int | None]) -> None:
    """`owner`: the sandbox user's uid and gid, who owns the staged bytes."""
    target = _abs(shells.options, path)
    stage = posixpath.join(shells.options.workdir, f".harness-transfer-{uuid.uuid4().hex}")
    _put_stage(shells, stage, data, owner)
    src, dst, parent = shlex.quote(stage), shlex.quote(target), shlex.quote(posixpath.dirname(target))
    _file_op(
        shells,
        f"mkdir -p -- {parent} && cat -- {src} > {dst}; __h_rc=$?; rm -f -- {src}; (exit $__h_rc)",
        target,
        "write",
        cap=65536,
    )


def _abs(opts: DockerOptions, path: str) -> str:
    return posixpath.normpath(posixpath.join(opts.workdir, path))


def _file_op(shells: Shells, command: str, target: str, verb: str, cap: int) -> bytes:
    control = shells.control()
    try:
        framed = control.run_framed(command, timeout=FILE_TIMEOUT_S, cap=cap)
    except ShellExited:
        shells.forget_control()
        shells.raise_if_dead(f"{verb}ing {target!r}")
        raise OSError(f"cannot {verb} {target}: the sandbox's file shell ended; try again") from None
    if framed.exit_code is None:  # a FIFO, or a device that never ends
        shells.forget_control()
        shells.kill_pid(control.pid)
        shells.kill_session(control.pid)
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
    raise _file_error(shells.options, framed.output.decode("utf-8", "replace").strip()[-400:], target, verb)


def _file_error(opts: DockerOptions, message: str, target: str, verb: str) -> OSError:
    as_user = f"as the sandbox user ({opts.user})"
    if "No such file" in message:
        return FileNotFoundError(errno.ENOENT, f"{target} does not exist", target)
    if "Read-only file system" in message:
        return PermissionError(
            errno.EROFS,
            f"cannot write {target}: it is on the read-only root filesystem; write under {opts.workdir} or /tmp",
        )
    if "Permission denied" in message:
        return PermissionError(errno.EACCES, f"cannot {verb} {target} {as_user}: permission denied", target)
    if "No space left" in message:
        return OSError(
            errno.ENOSPC,
            f"cannot write {target}: the workspace is full (quota {opts.disk}); delete files to make room",
        )
    if "Is a directory" in message:
        return IsADirectoryError(errno.EISDIR, f"{target} is a directory", target)
    if "Not a directory" in message:
        return NotADirectoryError(errno.ENOTDIR, f"a parent of {target} is not a directory", target)
    return OSError(f"cannot {verb} {target} {as_user}: {message}")


def _put_stage(shells: Shells, stage: str, data: bytes, owner: tuple[int | None, int | None]) -> None:
    parent, name = posixpath.split(stage)
    try:
        shells.api.put_archive(shells.container_id, os.fsencode(parent), _tar_one(name, data, 0o600, *owner))
    except NotFound:
        shells.raise_if_dead(f"writing {stage!r}")
        raise
    except APIError as e:
        if "no space left" in str(e).lower():
            raise OSError(
                errno.ENOSPC, f"the workspace is full (quota {shells.options.disk}): no room for {len(data)} bytes"
            ) from e
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
