"""`Journal.extend`: a journal written whole (an imported run) in one write, read back like any other: seqs
without gaps after what was there, each event's own time kept (or now), checksums, listeners told."""

from __future__ import annotations

import time

from agent.journal.store import Journal, scan
from core.events import MessageAdded, RunStopped
from core.types import Message


def test_extend_continues_the_seq_keeps_times_and_reads_back(tmp_path):
    journal = Journal(tmp_path)
    heard = []
    journal.listeners.append(heard.append)
    journal.append(MessageAdded(message=Message(role="system", text="first")))
    before = time.time()
    written = journal.extend(
        [
            MessageAdded(ts=1_700_000_000.0, message=Message(role="user", text="the task")),
            RunStopped(step=1, reason="submitted"),  # no time of its own: gets now
        ]
    )
    journal.close()
    found = scan(tmp_path)
    assert found.damage is None and not found.skipped
    assert [e.seq for e in found.events] == [1, 2, 3] and found.events[1:] == written
    assert found.events[1].ts == 1_700_000_000.0 and found.events[2].ts >= before
    assert [e.seq for e in heard] == [1, 2, 3]
    assert Journal(tmp_path).seq == 3  # a reopened journal continues after them
