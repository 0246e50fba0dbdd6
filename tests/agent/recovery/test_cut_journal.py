"""A run whose process died after any event of its journal, or while writing the next one, resumes to the end the
uninterrupted run reached: the same submission and the same world, whatever the call the crash cut short."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.resume import resume
from core.events import ToolObserved
from tests.agent.helpers import WRITE_READ_SUBMIT
from tests.agent.journal.damage import finished_run, lines


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("runs"))


def test_a_journal_cut_after_any_event_or_within_the_next_resumes_to_the_same_end(whole, tmp_path):
    written = lines(whole)
    end = read_events(whole)[-1]
    answer = submissions(whole)
    for kept in range(1, len(written)):
        for torn in (b"", written[kept][: len(written[kept]) // 2]):
            run_dir = tmp_path / f"cut-{kept}-{len(torn)}"
            shutil.copytree(whole, run_dir)
            for later in ("summary.json", "snapshot.json"):  # written at the stop the crash came before
                (run_dir / later).unlink()
            (run_dir / "events.jsonl").write_bytes(b"".join(written[:kept]) + torn)
            resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))
            stopped = read_events(run_dir)[-1]
            assert (stopped.type, stopped.reason, stopped.message) == (end.type, end.reason, end.message), (kept, torn)
            assert submissions(run_dir) == answer
            assert (run_dir / "workspace" / "a.txt").read_text() == (whole / "workspace" / "a.txt").read_text()


def submissions(run_dir: Path) -> list[str]:
    return [e.submission for e in read_events(run_dir) if isinstance(e, ToolObserved) and e.submission is not None]
