"""The approval gate: decisions a person records on waiting calls, and what the dispatcher makes of them.

A run whose reply holds a call that needs approval stops with `awaiting_approval`
(its snapshot written). `harness approve RUN_DIR --call ID --yes|--no` appends an
`approval` event; `harness resume` reads every decision back and continues.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.journal.store import Journal, read_events, read_run_info
from core.errors import HarnessError
from core.events import ApprovalGiven, Event, RunStopped


@dataclass(frozen=True)
class Decision:
    approved: bool
    note: str = ""
    answer: dict | None = None  # an accepted question's form content (see `answers_for`)

    def __bool__(self) -> bool:  # the dispatcher asks `if not decision`
        return self.approved


def decisions(events: Iterable[Event]) -> dict[str, Decision]:
    """The latest decision on each call id."""
    return {e.call_id: Decision(e.approved, e.note, e.answer) for e in events if isinstance(e, ApprovalGiven)}


def input_id(call_id: str, n: int) -> str:
    """The id of the n-th question (from 1) a tool asked while call `call_id` ran."""
    return f"{call_id}.input{n}"


def answers_for(approvals: Mapping[str, bool | Decision], call_id: str) -> tuple[dict, ...]:
    """A person's answers to the questions of one call, in the order asked, as the tool gives them to its
    server: accepted with their content, or declined."""
    answers: list[dict] = []
    while (decision := approvals.get(input_id(call_id, len(answers) + 1))) is not None:
        content = getattr(decision, "answer", None) or {}
        answers.append({"action": "accept", "content": content} if decision else {"action": "decline"})
    return tuple(answers)


def refusal_text(tool: str, decision: object) -> str:
    return f"Not run: the user refused the call to {tool}." + _note(decision)


def _note(decision: object) -> str:
    note = getattr(decision, "note", "")
    return f" Their note: {note}" if note else ""


def pending_calls(run_dir: Path) -> list[str]:
    """The calls a stopped run waits on and no decision has answered yet; [] when it waits on nothing."""
    return _undecided(*_waiting_stop(run_dir))


def _undecided(stop: RunStopped | None, events: list[Event]) -> list[str]:
    if stop is None:
        return []
    decided = {e.call_id for e in events if isinstance(e, ApprovalGiven) and e.seq > stop.seq}
    return [c for c in stop.outcome.get("pending", []) if c not in decided]


def _waiting_stop(run_dir: Path) -> tuple[RunStopped | None, list[Event]]:
    """The run's last event other than a decision, when it is a stop awaiting approval."""
    events = read_events(run_dir)
    last = next((e for e in reversed(events) if not isinstance(e, ApprovalGiven)), None)
    if isinstance(last, RunStopped) and last.reason == "awaiting_approval":
        return last, events
    return None, events


def record_decision(
    run_dir: Path, call_id: str, approved: bool, note: str = "", answer: dict | None = None
) -> ApprovalGiven:
    """Append one decision to a run that waits on `call_id` (an answer, for a question); the next `resume` acts on it."""
    run_dir = Path(run_dir)
    read_run_info(run_dir)  # a clear error when this is not a run directory
    stop, events = _waiting_stop(run_dir)
    waiting = _undecided(stop, events)

    if stop is None or call_id not in waiting:
        now = f"it waits on: {', '.join(waiting)}" if waiting else "it waits on no call"
        raise HarnessError(f"Run {run_dir.name} is not waiting for a decision on call {call_id!r}; {now}.")
    journal = Journal(run_dir)
    try:
        recorded = journal.append(
            ApprovalGiven(step=stop.step, call_id=call_id, approved=approved, note=note, answer=answer)
        )
    finally:
        journal.close()
    assert isinstance(recorded, ApprovalGiven)  # Journal.append returns a copy of the event it was given
    return recorded
