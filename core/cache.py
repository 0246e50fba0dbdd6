"""Where the harness keeps what it can rebuild but would rather not: `$HARNESS_CACHE`, default
`~/.cache/harness/` (root filesystems of images, code indexes)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("HARNESS_CACHE") or Path.home() / ".cache" / "harness")
