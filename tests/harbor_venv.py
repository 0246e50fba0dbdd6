"""Running a script under harbor, which needs Python >= 3.12: in the venv `make setup` makes for it
(scripts/setup_interop312.sh), skipping, with the reason, where there is none."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARBOR_PYTHON = ROOT / ".venv-interop312" / "bin" / "python"


def run_with_harbor(script: Path, *args: Path) -> dict:
    """The script's JSON on stdout, run on `args` by the harbor venv's Python (not this process's path)."""
    if not HARBOR_PYTHON.exists():
        pytest.skip(
            f"no Python >= 3.12 venv with harbor at {HARBOR_PYTHON.relative_to(ROOT)}: `make setup` makes one "
            "where a Python >= 3.12 exists (scripts/setup_interop312.sh)"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(HARBOR_PYTHON), str(script), *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
