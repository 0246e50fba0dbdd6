"""A folder as a tar blob and back: how a Ray task's run directories travel to the driver."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def pack(folder: Path) -> bytes:
    """Everything under `folder` (not the folder itself), gzipped; modes and contents kept."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for child in sorted(Path(folder).iterdir()):
            tar.add(child, arcname=child.name)
    return buf.getvalue()


def unpack(blob: bytes, into: Path) -> list[str]:
    """Extract into `into`; returns the top-level names. The `data` filter refuses absolute paths and `..`."""
    Path(into).mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(into, filter="data")
        return sorted({m.name.split("/")[0] for m in tar.getmembers()})
