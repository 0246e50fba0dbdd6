"""Tracked fixtures name no path of the machine that recorded them, so the suite passes in a clone at any path.

A recorded task that copies from `/home/me/project/.venv/...` replays only where that checkout exists. Every
string in every fixture (the task's setup, the model's tool calls, the recorded outputs) is scanned for absolute
paths; only the standard locations every Debian machine has are allowed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.tools.mcp.test_text import walk  # every string of a JSON value, keys included

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Other harnesses' runs as they published them: imported, never replayed, so the paths their agents saw are data.
PUBLISHED = FIXTURES / "imports"
STANDARD = ("/dev/", "/proc/", "/sys/", "/tmp/", "/var/tmp/", "/usr/", "/bin/", "/sbin/", "/etc/", "/lib/")
# A path starts a string or follows a space, quote, `=`, `:`, `(` or `[` (so `a/b` and URLs are not), and has
# two parts at least: a lone `/select` in quoted source code locates nothing.
ABSOLUTE = re.compile(r"(?:^|(?<=[\s\"'`=:(\[]))/[\w.+-]+(?:/[\w.+-]*)+")


def outside_paths(path: Path) -> set[str]:
    """The absolute paths outside the standard locations that a JSON or JSON-lines file names."""
    lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
    found = set()
    for line in lines:
        for text in walk(json.loads(line)):
            found |= {p for p in ABSOLUTE.findall(text) if not (p + "/").startswith(STANDARD)}
    return found


def fixture_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and PUBLISHED not in p.parents)


@pytest.mark.parametrize("path", fixture_files(FIXTURES), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_fixture_names_a_path_outside_the_clone(path):
    assert outside_paths(path) == set(), f"{path} names paths of the machine that recorded it"


def test_a_fixture_that_names_an_outside_virtualenv_is_caught(tmp_path):
    run = tmp_path / "run.json"
    setup = ["cp -r /work/elsewhere/.venv/lib/python3.11/site-packages/click click", "python plant_bug.py"]
    run.write_text(json.dumps({"task": {"setup": setup}}))
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"arguments": {"command": "cd /home/me/repo && ls /tmp/x"}}) + "\n")
    assert outside_paths(run) == {"/work/elsewhere/.venv/lib/python3.11/site-packages/click"}
    assert outside_paths(events) == {"/home/me/repo"}


def test_relative_paths_urls_and_standard_locations_are_allowed(tmp_path):
    run = tmp_path / "run.json"
    text = "see click/types.py, https://example.com/a/b, 2>/dev/null, rootdir: /tmp/pytest-1/w, /usr/bin/env"
    run.write_text(json.dumps({"text": text}))
    assert outside_paths(run) == set()
