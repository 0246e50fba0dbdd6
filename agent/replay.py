"""Replay a recorded run: the same model replies, a fresh sandbox, and every observation compared.

The recorded `model_replied` events become a scripted model and the recorded
`summary_replied` events the summariser, so each is handed its own replies; the task's files and
setup prepare a new sandbox; recorded approval decisions are fed back. Any tool
observation whose status or text differs from the recording is a divergence,
reported with a unified diff: the world (or a tool) no longer behaves as it did.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from agent.approval import decisions
from core.events import ModelReplied, RunStopped, SummaryReplied, ToolObserved
from agent.journal import Journal, RunInfo, read_events, read_run_info
from agent.launch import make_sandbox, prepare
from agent.loop import run
from agent.models.scripted import ScriptedModel
from core.policy import HarnessPolicy
from agent.task import Task
from core.types import Observation
from memory.summariser import RecordedSummariser
from sandboxes.base import Sandbox
from tools.base import Registry
from tools.builtin import standard_tools
from tools.mcp import with_mcp


@dataclass(frozen=True)
class Divergence:
    step: int
    call_id: str
    tool: str
    what: str  # one line
    diff: str  # unified diff, recorded -> replayed


@dataclass
class ReplayReport:
    replay_dir: Path
    observations: int  # compared
    divergences: list[Divergence] = field(default_factory=list)
    recorded_stop: str = "unfinished"
    replayed_stop: str = ""


def replay(run_dir: Path, out: Path | None = None, tools: Registry | None = None,
           sandbox: Callable[[Path], Sandbox] | None = None) -> ReplayReport:
    """Re-drive the loop of `run_dir` with its recorded replies in a fresh sandbox; the new run lands under `out`."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    events = read_events(run_dir)
    task, policy = Task.model_validate(info.task), HarnessPolicy.model_validate(info.policy)
    replies = [e.reply for e in events if isinstance(e, ModelReplied)]
    journal = Journal.create(Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="harness-replay-")),
                             _replay_info(info))
    box = sandbox(journal.dir / "workspace") if sandbox is not None else make_sandbox(info.sandbox, journal.dir / "workspace")
    try:
        prepare(task, box, policy.dispatch.tool_timeout_s)
        with with_mcp(policy.mcp, tools or standard_tools()) as registry:
            summary = run(task, ScriptedModel(replies, name=f"replay:{info.run_id}"), registry, box, policy, journal,
                          approvals=decisions(events),
                          summariser=RecordedSummariser(e for e in events if isinstance(e, SummaryReplied)))
    finally:
        box.close()
        journal.close()
    recorded = [e for e in events if isinstance(e, ToolObserved)]
    replayed = [e for e in read_events(journal.dir) if isinstance(e, ToolObserved)]
    stops = [e for e in events if isinstance(e, RunStopped)]
    return ReplayReport(
        replay_dir=journal.dir,
        observations=min(len(recorded), len(replayed)),
        divergences=compare(recorded, replayed),
        recorded_stop=stops[-1].reason if stops else "unfinished",
        replayed_stop=summary.stop_reason,
    )


def compare(recorded: list[ToolObserved], replayed: list[ToolObserved]) -> list[Divergence]:
    out = []
    for old, new in zip(recorded, replayed):
        a, b = old.observation, new.observation
        if (a.call_id, a.status, a.text) != (b.call_id, b.status, b.text):
            what = f"status {a.status} -> {b.status}" if a.status != b.status else "output changed"
            out.append(Divergence(old.step, a.call_id, a.tool, what, _diff(a, b)))
    for extra in recorded[len(replayed):]:
        o = extra.observation
        out.append(Divergence(extra.step, o.call_id, o.tool, "recorded, but the replay stopped before it", ""))
    for extra in replayed[len(recorded):]:
        o = extra.observation
        out.append(Divergence(extra.step, o.call_id, o.tool, "replayed, but the recording has no such observation", ""))
    return out


def _diff(a: Observation, b: Observation) -> str:
    old = [f"[{a.status}]\n", *a.text.splitlines(keepends=True)]
    new = [f"[{b.status}]\n", *b.text.splitlines(keepends=True)]
    lines = difflib.unified_diff(old, new, fromfile=f"recorded {a.call_id}", tofile=f"replayed {b.call_id}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _replay_info(info: RunInfo) -> RunInfo:
    return info.model_copy(update={
        "run_id": f"{info.run_id}-replay-{datetime.now(timezone.utc).strftime('%H%M%S%f')}",
        "model": f"replay:{info.run_id}",
        "started_at": datetime.now(timezone.utc).isoformat(),
    })
