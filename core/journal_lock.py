"""Whether a run is alive: some process holds the exclusive lock on its journal (`events.jsonl`).

The journal's writer (agent/journal/store.py) takes the lock for as long as it writes; the kernel drops it when
that process dies, kill -9 included. Probed with a shared, non-blocking flock released at once: it fails only
while an exclusive holder exists.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

JOURNAL = "events.jsonl"


def run_alive(run_dir: str | os.PathLike) -> bool:
    """True while a process holds the run's journal lock. A run folder without a journal is dead."""
    try:
        with open(Path(run_dir, JOURNAL), "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            return False
    except FileNotFoundError:
        return False
    except OSError:  # held (BlockingIOError), or cannot tell: never take a run in use for a dead one
        return True
