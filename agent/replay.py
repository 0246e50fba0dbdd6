"""Replay a recorded run: the same model replies, a fresh sandbox, and every observation compared.

The recorded `model_replied` events become a scripted model; the task's files and
setup prepare a new sandbox; recorded approval decisions are fed back. Any tool
observation whose status or text differs from the recording is a divergence,
reported with a unified diff: the world (or a tool) no longer behaves as it did.
"""

from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from agent.approval import decisions
from core.events import ModelReplied, RunStopped, ToolObserved
from agent.journal import RunInfo, read_events, read_run_info
from agent.models.scripted import ScriptedModel
from agent.session import RunSpec, SandboxFactory, open_run, recorded_sandbox
from core.policy import HarnessPolicy
from agent.task import Task
from core.types import Observation
from core.errors import HarnessError
from tools.base import Registry


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
           sandbox: SandboxFactory | None = None) -> ReplayReport:
    """Re-drive the loop of `run_dir` with its recorded replies in a fresh sandbox; the new run lands under `out`."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    events = read_events(run_dir)
    task, policy = Task.model_validate(info.task), HarnessPolicy.model_validate(info.policy)
    replies = [e.reply for e in events if isinstance(e, ModelReplied)]
    box = sandbox if sandbox is not None else recorded_sandbox(info)
    if box is None:
        raise HarnessError(f"Run {info.run_id} used a custom sandbox ({info.sandbox}); replay it from code, "
                           "passing the same sandbox factory.")
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="harness-replay-"))
    spec = RunSpec(task, ScriptedModel(replies, name=f"replay:{info.run_id}"), policy, out_dir, sandbox=box,
                   toolset=info.toolset, tools=tools, run_id=_replay_id(info), seed=info.seed)
    with open_run(spec) as session:
        summary = session.run(approvals=decisions(events))
    journal = session.journal
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


def _replay_id(info: RunInfo) -> str:
    return f"{info.run_id}-replay-{datetime.now(timezone.utc).strftime('%H%M%S%f')}"
