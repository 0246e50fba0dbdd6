"""The file names of a run's artifacts/: a tool call's id is in them, and it is whatever the model sent."""

from __future__ import annotations

import hashlib
import os
import re

MAX_ARTIFACT_NAME = 160  # characters: well under a file system's 255 bytes, with room for a digest


def artifact_name(name: str) -> str:
    """`name` as a file of artifacts/: characters other than [A-Za-z0-9_.-] as `_` and, where that changed it or it
    is too long to be a file's name, a digest of `name` before its extension, so that two names never share a file.
    A name holds a tool call's id, which is whatever the model sent."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    if safe == name and len(safe) <= MAX_ARTIFACT_NAME and safe.strip("."):
        return safe
    stem, ext = os.path.splitext(safe)
    if len(ext) > 16:  # no extension, only a dot in the id
        stem, ext = safe, ""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{stem[: MAX_ARTIFACT_NAME - len(digest) - len(ext) - 1]}-{digest}{ext}"
