"""A run that dies inside an overflow recovery resumes to the journal the uninterrupted run wrote.

The crash is the journal cut right after one event, as a kill -9 there leaves it (the tools only
read, so the workspace holds nothing the cut would undo): after a `summary_replied` of an
emergency fold, before its `context_overflow`; after a step's first recovery when a second one
followed; after a step's last recovery, before its model call. The resumed journal must be the
uninterrupted one as replay compares them (prompts, observations, recoveries, stop).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import compare_harness
from agent.resume import resume
from agent.session import RunSpec, start
from core.events import ContextOverflowed, Event, SummaryReplied
from tests.agent.costly_run import SummarisingModel, costly_run, policy

STEPS = 60
WINDOW = 8000


def uninterrupted(root: Path, summariser: str) -> tuple[Path, list]:
    made = costly_run(seed=0, steps=STEPS)
    model = SummarisingModel(made.replies)
    summary, run_dir = start(RunSpec(made.task, model, policy(WINDOW, summariser=summariser, steps=STEPS), root))
    assert summary.stop_reason == "submitted"
    return run_dir, model.replies


def killed_after(reference: Path, event: Event, to: Path) -> Path:
    shutil.copytree(reference, to)
    lines = (to / "events.jsonl").read_text().splitlines(keepends=True)
    (to / "events.jsonl").write_text("".join(lines[: event.seq]))
    for name in ("snapshot.json", "summary.json"):  # written later than the cut
        (to / name).unlink()
    return to


def first_of_two(events: list[Event]) -> Event:
    """A step's first recovery where the same step needed a second."""
    overflows = [e for e in events if isinstance(e, ContextOverflowed)]
    return next(e for e, after in zip(overflows, overflows[1:], strict=False) if e.step == after.step)


def last_before_reply(events: list[Event]) -> Event:
    return [e for e in events if isinstance(e, ContextOverflowed)][-1]


def summary_of_a_fold(events: list[Event]) -> Event:
    summaries = [e for e in events if isinstance(e, SummaryReplied)]
    return summaries[len(summaries) // 2]


@pytest.mark.parametrize(
    ("summariser", "where"),
    [("extractive", first_of_two), ("extractive", last_before_reply), ("model", summary_of_a_fold)],
    ids=["between-two-recoveries", "before-the-model-call", "inside-an-emergency-fold"],
)
def test_a_run_killed_in_an_overflow_recovery_resumes_to_the_uninterrupted_journal(tmp_path, summariser, where):
    reference, script = uninterrupted(tmp_path / "reference", summariser)
    recorded = read_events(reference)
    run_dir = killed_after(reference, where(recorded), tmp_path / "killed")
    done = resume(run_dir, model=ScriptedModel(script))
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    divergences = compare_harness(recorded, read_events(run_dir))
    assert divergences == [], "\n".join(d.what + "\n" + d.diff for d in divergences[:3])
    assert done.summary.overflow_recoveries == sum(isinstance(e, ContextOverflowed) for e in recorded)
