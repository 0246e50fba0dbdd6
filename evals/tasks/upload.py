"""A host folder copied into a sandbox, as Harbor uploads tests/ and solution/: one tar archive, unpacked there."""

from __future__ import annotations

import io
import shlex
import tarfile
import uuid
from pathlib import Path

from sandboxes.base import Sandbox

UPLOAD_TIMEOUT_S = 300


def folder_tar(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buf.getvalue()


def upload(box: Sandbox, folder: Path, target: str) -> None:
    """`folder`'s files under `target` in the sandbox (created, and emptied of what was there first)."""
    staged = f"/tmp/.harness-upload-{uuid.uuid4().hex}.tar"
    box.write_file(staged, folder_tar(folder))
    dest, tar = shlex.quote(target), shlex.quote(staged)
    result = box.exec(
        f"rm -rf {dest} && mkdir -p {dest} && tar -xf {tar} -C {dest} --no-same-owner; rc=$?; rm -f {tar}; (exit $rc)",
        timeout=UPLOAD_TIMEOUT_S,
    )
    if result.exit_code != 0:
        raise RuntimeError(f"uploading {folder} to {target} failed (exit {result.exit_code}): {result.output[-500:]}")
