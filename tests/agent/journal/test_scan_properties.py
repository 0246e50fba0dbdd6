"""A journal damaged in any way: its reading raises nothing but the harness's own error, keeps every event written
before the first damaged byte, reads no event the run did not write, and a repair leaves a journal that scans whole
with those events."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.journal.integrity import check_run
from agent.journal.store import Journal, read_run_info, scan
from core.errors import HarnessError
from tests.agent.journal.damage import finished_run


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("runs"))


def damages(journal: bytes):
    """One change to `journal`, as (start, end, new bytes): the bytes start..end replaced by the new ones."""
    size = len(journal)
    at = st.integers(0, size - 1)
    byte = st.binary(min_size=1, max_size=1)
    return st.one_of(
        st.tuples(at, byte).map(lambda p: (p[0], p[0] + 1, p[1])),  # a byte changed
        st.tuples(at, st.integers(1, 200)).map(lambda p: (p[0], min(size, p[0] + p[1]), b"")),  # bytes lost
        st.tuples(at, st.binary(min_size=1, max_size=40)).map(lambda p: (p[0], p[0], p[1])),  # bytes added
        at.map(lambda n: (n, size, b"")),  # the end lost
        st.tuples(at, st.integers(1, 4096)).map(lambda p: (p[0], min(size, p[0] + p[1]), b"\0" * p[1])),  # zeroed
    )


def ends_lost(journal: bytes):
    """The bytes of one line from a member's start (a comma before a quote) to its checksum's end lost, its closing
    brace kept: what is left is whole JSON where the member was at the top, an event with other content."""
    closing = {n - 1 for n in range(len(journal)) if journal[n : n + 1] == b"\n"}  # each line's closing brace
    starts = [n for n in range(len(journal)) if journal[n : n + 2] == b',"']
    return st.sampled_from(starts).map(lambda n: (n, min(c for c in closing if c > n), b""))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=st.data())
def test_any_damage_is_read_without_a_traceback_and_loses_nothing_before_it(whole, data):
    original = (whole / "events.jsonl").read_bytes()
    holds(whole, original, data.draw(damages(original)))


@SETTINGS
@given(data=st.data())
def test_a_line_that_lost_its_end_is_damage_not_an_older_event(whole, data):
    original = (whole / "events.jsonl").read_bytes()
    holds(whole, original, data.draw(ends_lost(original)))


def holds(whole: Path, original: bytes, change: tuple[int, int, bytes]) -> None:
    start, end, new = change
    damaged = original[:start] + new + original[end:]
    if damaged == original:
        return
    lines = original.splitlines(keepends=True)
    before = sum(1 for n in range(len(lines)) if len(b"".join(lines[: n + 1])) <= start)  # lines wholly before it
    events = scan(whole).events
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        shutil.copytree(whole, run_dir)
        (run_dir / "events.jsonl").write_bytes(damaged)
        try:
            found = check_run(run_dir, read_run_info(run_dir)).found
        except HarnessError:
            return
        assert found.events[:before] == events[:before]
        # A checksum guards every line the harness wrote; only a first line that lost its own reads as a journal
        # from before checksums, whose lines are read unchecked.
        made_up = [e for e in found.events if e not in events]
        assert not made_up or (made_up == found.events[:1] and start < len(lines[0]))
        if found.damage is None:
            return
        assert found.kept >= before
        journal = Journal(run_dir)
        journal.repair()
        journal.close()
        again = scan(run_dir)
        assert again.damage is None and again.events == found.events[: found.kept]
