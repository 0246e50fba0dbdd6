"""The files of a tar archive as (path, bytes): how a repository reaches the index, from a sandbox
(tools.code.workspace) or from `git archive` of a commit (evals.localize).

Only regular files count: a symbolic link is never followed (it may point out of the workspace), and
folders, devices and pipes hold no source.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Iterator


def tar_files(data: bytes) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar:
            if not member.isreg():
                continue
            path = posixpath.normpath(member.name)
            if path.startswith(("../", "/")) or path == "..":
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                yield path, handle.read()
