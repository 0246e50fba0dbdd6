"""What every reader of a run directory checks before it uses the journal: is events.jsonl whole,
and does summary.json still describe it.

`harness report`, `replay`, `rerender` and `ab` call `check_run` first, say its `notes` (a warning
on stderr, and in the report itself), and take the events and the summary from it. So a torn or
damaged journal is never shown as whole, and a summary.json that the journal no longer matches
(a resume that died after it was written, a journal cut or corrupted later) is never shown as the
run's figures: those are derived from the readable events instead. It only reads the run folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from agent.journal.store import BadLine, RunInfo, Scan, scan
from agent.journal.summary import Summary, summarize
from core.events import Event

# What summary.json says that the journal alone decides (its outcome is not: chess and SWE graders
# rewrite it, and wall time is the loop's clock).
FIGURES: tuple[tuple[str, Callable[[Summary], object]], ...] = (
    ("stop", lambda s: s.stop_reason),
    ("steps", lambda s: s.steps),
    ("model calls", lambda s: s.model_calls),
    ("tool calls", lambda s: s.tool_calls_total),
    ("prompt tokens", lambda s: s.tokens.prompt),
    ("completion tokens", lambda s: s.tokens.completion),
)


@dataclass(frozen=True)
class RunCheck:
    found: Scan
    summary: Summary  # summary.json when it describes the journal; else the figures derived from the readable events
    notes: list[str] = field(default_factory=list)  # what a reader says before using the journal; [] when all is well

    @property
    def events(self) -> list[Event]:
        return self.found.events

    @property
    def torn(self) -> BadLine | None:
        """The journal ends in a line cut short mid-write: the process died while writing its last event."""
        return next((b for b in self.found.tail if b.torn), None) if self.found.damage is None else None

    @property
    def damage(self) -> BadLine | None:
        return self.found.damage


def check_run(run_dir: Path, info: RunInfo) -> RunCheck:
    run_dir = Path(run_dir)
    found = scan(run_dir)
    notes = journal_notes(found)
    derived = _derived(found.events, info)
    recorded, unreadable = _summary_file(run_dir)
    if unreadable:
        notes.append(f"summary.json cannot be read ({unreadable}); the figures shown are derived from the journal")
        return RunCheck(found, derived, notes)
    if recorded is None:
        return RunCheck(found, derived, notes)
    if found.damage is not None or found.tail:
        notes.append(
            f"summary.json is not used: the journal is not whole, so the figures shown are derived from its "
            f"{len(found.events)} readable events"
        )
        return RunCheck(found, derived, notes)
    differs = next(
        (
            f"it says {what} {get(recorded)}, the journal {get(derived)}"
            for what, get in FIGURES
            if get(recorded) != get(derived)
        ),
        None,
    )
    if differs is not None:
        notes.append(
            f"summary.json does not match the journal ({differs}): it is stale, so the figures shown are derived "
            "from the journal"
        )
        return RunCheck(found, derived, notes)
    return RunCheck(found, recorded, notes)


def journal_notes(found: Scan) -> list[str]:
    """One sentence per line of events.jsonl that is not an event, saying what it means for the run."""
    out = []
    for bad in sorted(found.skipped, key=lambda b: b.lineno):
        if bad is found.damage:
            out.append(
                f"{damaged(bad)}; an event that was written is lost there, so what follows is read from the "
                f"{len(found.events)} readable events"
            )
        elif bad.lineno > found.last_line:
            out.append(
                f"{torn_tail(bad)}; the {len(found.events)} events before it are read"
                if bad.torn
                else f"events.jsonl {bad.why}; it is skipped"
            )
        else:
            out.append(skipped_note(bad))
    if found.damage is not None and found.damage not in found.skipped:  # a gap: events are missing, no line is bad
        out.append(f"{damaged(found.damage)}; what follows is read from the {len(found.events)} readable events")
    return out


def damaged(bad: BadLine) -> str:
    """The damage in words: the line and what is wrong with it, or the events a gap in the seqs lost."""
    return f"events.jsonl {bad.why}" if bad.why.startswith("line ") else f"events.jsonl is damaged: {bad.why}"


def torn_tail(bad: BadLine) -> str:
    return (
        f"events.jsonl has a torn tail at line {bad.lineno}: it was cut short mid-write (the process died writing it)"
    )


def skipped_note(bad: BadLine) -> str:
    """A bad line the journal went on after with the next event: nothing is missing."""
    return f"events.jsonl {bad.why}; it is skipped (the journal goes on after it and no event is missing)"


def _derived(events: list[Event], info: RunInfo) -> Summary:
    stamps = [e.ts for e in events if e.ts]
    return summarize(events, info, (max(stamps) - min(stamps)) if stamps else 0.0)


def _summary_file(run_dir: Path) -> tuple[Summary | None, str]:
    """summary.json, or why it cannot be read ("" when it can, or is not there)."""
    path = run_dir / "summary.json"
    try:
        return Summary.model_validate_json(path.read_bytes()), ""
    except FileNotFoundError:
        return None, ""
    except OSError as e:
        return None, e.strerror or str(e)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"{where + ': ' if where else ''}{first['msg']}"
