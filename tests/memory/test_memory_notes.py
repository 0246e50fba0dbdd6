"""The memory's ledger and how the prompt shows it: the current notes in full, what was superseded one line each
with the steps it held for, and the run's changes as of a fold."""

from __future__ import annotations

from core.memory_entries import MemoryChange, MemoryEntry, Provenance
from memory.ledger import current, dated, read_by_view, superseded, versions, written_on
from memory.notes import AS_OF, OPENING, SUPERSEDED, opening_note, run_note


def write(ledger, path, text, step, run="r", source=None, instance="i1", moved_from=None):
    change = MemoryChange(path=path, text=text, moved_from=moved_from)
    entries = dated(ledger, [change], Provenance(source=source), run, instance, step, 1000.0 + step, f"c{step}")
    return ledger + entries


def test_a_newer_entry_of_a_path_supersedes_the_older_which_keeps_its_validity():
    ledger = write([], "/memories/config.md", "timeout = 30\nhost = db\n", 3, source="call_3")
    ledger = write(ledger, "/memories/config.md", "timeout = 60\nhost = db\n", 9, source="call_9")
    ledger = write(ledger, "/memories/todo.md", "fix parse()\n", 10)
    old, new, todo = ledger
    assert (old.id, new.id, new.supersedes, todo.supersedes) == ("r/1", "r/2", "r/1", None)
    assert (old.kind, todo.kind) == ("observation", "conclusion")
    assert [(v.entry.id, v.until and v.until.id) for v in versions(ledger)] == [
        ("r/1", "r/2"),
        ("r/2", None),
        ("r/3", None),
    ]
    assert [e.id for e in current(ledger)] == ["r/2", "r/3"]
    assert [v.entry.id for v in superseded(ledger)] == ["r/1"]


def test_the_run_note_shows_the_latest_value_as_current_and_the_older_one_superseded_with_its_steps():
    ledger = write([], "/memories/config.md", "timeout = 30\nhost = db\n", 3, source="call_3")
    ledger = write(ledger, "/memories/config.md", "timeout = 60\nhost = db\n", 9, source="call_9")
    note = run_note(ledger, "r", 12, shown=8)
    assert note is not None and note.startswith(f"{AS_OF} 12:")
    body, old = note.split(SUPERSEDED)
    assert "timeout = 60" in body and "timeout = 30" not in body
    assert "#2, observation from call_9, written at step 9; supersedes #1" in body
    assert old.strip() == (
        '- /memories/config.md: "timeout = 30", held from step 3 until step 9 (#1, observation; superseded by #2)'
    )
    # As of an earlier step the older value was the current one.
    earlier = run_note(ledger, "r", 5, shown=8)
    assert earlier is not None and "timeout = 30" in earlier and SUPERSEDED not in earlier
    assert run_note(ledger, "r", 2, shown=8) is None


def test_deletions_and_moves_are_superseded_lines_and_only_the_newest_are_listed():
    ledger = write([], "/memories/a.md", "alpha\n", 1)
    ledger = write(ledger, "/memories/a.md", None, 2)
    for step in range(3, 8):
        ledger = write(ledger, "/memories/b.md", f"v{step}\n", step)
    tomb = dated(
        ledger,
        [
            MemoryChange(path="/memories/b.md", text=None),
            MemoryChange(path="/memories/c.md", text="v7\n", moved_from="/memories/b.md"),
        ],
        Provenance(),
        "r",
        None,
        8,
        0.0,
        "c8",
    )
    ledger += tomb
    note = run_note(ledger, "r", 8, shown=3)
    assert note is not None
    lines = note.split(SUPERSEDED)[1].strip().splitlines()
    assert (
        lines[0].startswith('- /memories/b.md: "v7", held from step 7 until step 8')
        and "moved to /memories/c.md" in lines[0]
    )
    assert lines[-1] == "- and 3 older superseded version(s), kept in the ledger"
    assert "1 deleted" in note.splitlines()[0] and "/memories/c.md (" in note


def test_the_opening_note_dates_entries_of_earlier_runs_and_is_absent_for_an_empty_store():
    assert opening_note([], shown=8) is None
    ledger = write([], "/memories/repo.md", "tests: pytest -x\n", 4, run="earlier")
    note = opening_note(ledger, shown=8)
    assert note is not None and note.startswith(OPENING)
    assert "written at step 4 of run earlier" in note and "tests: pytest -x" in note


def test_what_a_view_read_and_what_each_instance_wrote():
    ledger = write([], "/memories/a.md", "x", 1, instance="i1")
    ledger = write(ledger, "/memories/d/b.md", "y", 2, instance="i2")
    assert [e.path for e in read_by_view(ledger, "/memories/d")] == ["/memories/d/b.md"]
    assert [e.path for e in read_by_view(ledger, "/memories")] == ["/memories/a.md", "/memories/d/b.md"]
    assert list(written_on(ledger, ["i2", "i3"])) == ["i2"]


def test_entries_are_values_a_ledger_line_round_trips():
    (entry,) = write([], "/memories/a.md", "é\n", 1)
    assert MemoryEntry.model_validate_json(entry.model_dump_json()) == entry
