"""The check every reader of a run directory makes first: what is wrong with events.jsonl (a torn tail, a
damaged line and why), and whether summary.json still describes it; the figures come from the readable
events whenever it does not. The check only reads: the journal's bytes stay as they were."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.journal.integrity import check_run
from agent.journal.store import read_run_info, scan
from agent.journal.summary import Summary
from agent.models.scripted import ScriptedModel
from agent.resume import resume
from tests.agent.helpers import WRITE_READ_SUBMIT
from tests.agent.journal.damage import cut, finished_run, flip, lines, tear


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def run_dir(finished, tmp_path) -> Path:
    return Path(shutil.copytree(finished, tmp_path / finished.name))


def checked(run_dir: Path):
    """check_run, asserting it left events.jsonl byte for byte as it was."""
    before = (run_dir / "events.jsonl").read_bytes()
    check = check_run(run_dir, read_run_info(run_dir))
    assert (run_dir / "events.jsonl").read_bytes() == before
    return check


def recorded(run_dir: Path) -> Summary:
    return Summary.model_validate_json((run_dir / "summary.json").read_text())


def test_a_whole_journal_and_its_summary_are_used_as_they_are(run_dir):
    check = checked(run_dir)
    assert check.notes == [] and check.damage is None and check.torn is None
    assert check.summary == recorded(run_dir) and check.summary.stop_reason == "submitted"


def test_a_torn_tail_is_named_and_the_figures_come_from_the_events_before_it(run_dir):
    torn = len(lines(run_dir)) - 2  # the process died writing the last tool observation
    tear(run_dir, torn)
    check = checked(run_dir)
    assert check.torn is not None and check.torn.lineno == torn and check.damage is None
    assert check.notes == [
        f"events.jsonl has a torn tail at line {torn}: it was cut short mid-write (the process died writing it); "
        f"the {torn - 1} events before it are read",
        f"summary.json is not used: the journal is not whole, so the figures shown are derived from its "
        f"{torn - 1} readable events",
    ]
    assert check.summary.stop_reason == "unfinished" and recorded(run_dir).stop_reason == "submitted"
    assert len(check.events) == torn - 1


def test_a_flipped_byte_is_a_damaged_line_with_a_checksum_mismatch(run_dir):
    flip(run_dir, 5)
    check = checked(run_dir)
    assert check.damage is not None and check.damage.lineno == 5 and check.torn is None
    total = len(lines(run_dir))
    assert check.notes[0] == (
        "events.jsonl line 5 is damaged: its checksum does not match its content; an event that was written is "
        f"lost there, so what follows is read from the {total - 1} readable events"
    )
    assert check.notes[1].startswith("summary.json is not used: the journal is not whole")
    assert check.summary.tool_calls_total == recorded(run_dir).tool_calls_total - 1  # line 5 held an observation


def test_a_line_that_is_not_json_in_the_middle_is_damage_not_a_torn_write(run_dir):
    kept = lines(run_dir)
    kept[4] = b"this is not an event\n"
    (run_dir / "events.jsonl").write_bytes(b"".join(kept))
    check = checked(run_dir)
    assert check.damage is not None and check.damage.why == "line 5 is damaged: it is not JSON"
    assert check.torn is None


def test_a_last_line_written_whole_that_fails_its_checksum_is_damage(run_dir):
    last = len(lines(run_dir))
    flip(run_dir, last)
    found = scan(run_dir)
    assert found.damage is not None and found.damage.lineno == last and not found.damage.torn
    assert checked(run_dir).summary.stop_reason == "unfinished"  # the run_stopped line is the one lost


def test_a_torn_line_a_resume_wrote_past_is_said_and_the_summary_is_current(run_dir):
    torn = len(lines(run_dir)) - 2
    tear(run_dir, torn)
    resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))
    check = checked(run_dir)
    assert check.damage is None and check.torn is None
    assert check.notes == [
        f"events.jsonl line {torn} is torn (cut short mid-write); it is skipped (the journal goes on after it and "
        "no event is missing)"
    ]
    assert check.summary == recorded(run_dir) and check.summary.stop_reason == "submitted"


def test_a_summary_the_journal_no_longer_matches_is_stale(run_dir):
    cut(run_dir, len(lines(run_dir)) - 3)  # every line whole: nothing looks damaged, but the end is gone
    check = checked(run_dir)
    assert check.notes == [
        "summary.json does not match the journal (it says stop submitted, the journal unfinished): it is stale, "
        "so the figures shown are derived from the journal"
    ]
    assert check.summary.stop_reason == "unfinished"


def test_a_summary_that_cannot_be_read_is_said(run_dir):
    (run_dir / "summary.json").write_bytes(b"\xff\xfe{")
    check = checked(run_dir)
    assert len(check.notes) == 1 and check.notes[0].startswith("summary.json cannot be read (")
    assert check.notes[0].endswith("); the figures shown are derived from the journal")
    assert check.summary.stop_reason == "submitted"
