"""What reports read of a run's journal: the shared step fold (agent.journal.fold), and the few
figures a report derives from a compaction event."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from agent.journal.fold import Step, fold
from agent.journal.store import RunInfo
from agent.journal.summary import Summary, summarize
from core.events import Compacted, Event

CUT_REASONS = {"length", "max_tokens", "max_output_tokens", "truncated"}  # finish reasons of a reply cut off


def steps_of(events: list[Event]) -> list[Step]:
    return fold(events).steps


def memory_text(c: Compacted) -> str:
    """The working memory a compaction produced, as sorted JSON ("" when it produced none)."""
    if c.fold is None:
        return ""
    return json.dumps(c.fold.memory.model_dump(mode="json"), indent=1, sort_keys=True, ensure_ascii=False)


def cut_off(c: Compacted) -> bool:
    """The summariser hit its token cap (on a retried attempt, or on the one kept)."""
    return c.cut_off or c.finish_reason in CUT_REASONS


def load_summary(run_dir: Path, events: list[Event], info: RunInfo) -> Summary:
    """summary.json when the run wrote one; else the same figures derived from the journal."""
    path = Path(run_dir) / "summary.json"
    if path.exists():
        try:
            return Summary.model_validate_json(path.read_text())
        except ValidationError:
            pass  # an older or newer shape: derive it instead
    stamps = [e.ts for e in events if e.ts]
    return summarize(events, info, (max(stamps) - min(stamps)) if stamps else 0.0)
