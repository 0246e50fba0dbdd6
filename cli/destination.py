"""Where a command that reads runs writes what it makes (report.html, ab.html) when no --out was given:
its usual folder when this process may write there, else a new temporary folder, said on stderr. So a
read-only run folder (archived, mounted read-only, immutable) is readable by every command."""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from cli.output import warn


def can_write(path: Path) -> bool:
    """Whether this process may create `path`, or write into it and replace its files when it is a folder."""
    if path.is_dir():
        return os.access(path, os.W_OK | os.X_OK)
    if path.exists():
        return os.access(path, os.W_OK)
    return can_write(path.parent) if path.parent != path else False


def usual_or_temp(usual: Path, needs: list[Path], prefix: str, what: str) -> Path:
    """`usual` when every path in `needs` can be written; else a fresh temporary folder."""
    blocked = next((p for p in needs if not can_write(p)), None)
    if blocked is None:
        return usual
    elsewhere = Path(tempfile.mkdtemp(prefix=prefix))
    warn(
        f"{blocked} cannot be written (read-only?), so the {what} goes to {elsewhere} instead; choose the folder with --out.",
        label="note",
    )
    return elsewhere


def stamp() -> str:
    """The time part of a new folder's name, so each run of a command gets its own folder under --out."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
