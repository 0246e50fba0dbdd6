"""Running the knowledge-update probes: each probe under a policy, with the agent's memory on or off.

The world's edits are made between steps through the run's own sandbox (local or Docker), by a rule the loop
calls after every step, so they land at the same point of every run. Compaction is forced: the policy's
compact step, kept as it is but for its trigger (every `FOLD_EVERY` steps) and its `keep_first_tokens`
(scaled down to a probe's size), folds in the middle of each probe; the extractive summariser writes the
working memory, so no model runs. After each fold the next prompt is judged (evals.probes.check).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.journal.store import read_events
from agent.loop import run
from agent.models.scripted import ScriptedModel
from agent.run.state import RunState
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, open_run, open_sandbox
from agent.tokens import counter_for
from core.context_policy import Compact
from core.events import Compacted
from core.policy import HarnessPolicy, MemoryPolicy
from core.types import Message
from evals.probes.check import FoldCheck, check_fold
from evals.probes.knowledge import Probe
from memory.extractive import ExtractiveSummariser
from sandboxes.base import Sandbox

FOLD_EVERY = 3
KEEP_FIRST_TOKENS = 120  # a probe's first step or so: the presets' 7,000 are for runs a hundred times longer


class Watching(ScriptedModel):
    """The probe's scripted replies, keeping every prompt it is sent: prompts[k] is step k + 1's."""

    def __init__(self, probe: Probe):
        super().__init__(probe.replies, name=f"probe:{probe.name}")
        self.prompts: list[list[Message]] = []

    def complete(self, messages, tools, params):
        self.prompts.append(list(messages))
        return super().complete(messages, tools, params)


def forced(policy: HarnessPolicy, memory: bool) -> HarnessPolicy:
    """The policy with its compaction forced every FOLD_EVERY steps, and the memory tool on or off."""
    context = [
        s.model_copy(
            update={
                "every_steps": FOLD_EVERY,
                "trigger_tokens": 10**9,
                "keep_first_tokens": min(s.keep_first_tokens, KEEP_FIRST_TOKENS)
                if isinstance(s.keep_first_tokens, int)
                else KEEP_FIRST_TOKENS,
            }
        )
        if isinstance(s, Compact)
        else s
        for s in policy.context
    ]
    if not any(isinstance(s, Compact) for s in context):
        raise ValueError(f"policy {policy.name} has no compact step to force")
    name = f"{policy.name}{'+memory' if memory else ''}"
    return policy.model_copy(update={"name": name, "context": context, "memory": MemoryPolicy(tool=memory)})


@dataclass
class ProbeRun:
    probe: str
    policy: str
    memory: bool
    run_dir: Path
    folds: list[FoldCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.folds) and all(f.ok for f in self.folds)

    @property
    def latest_shown(self) -> bool:
        return bool(self.folds) and all(f.latest_shown for f in self.folds)

    @property
    def stale(self) -> bool:
        return any(f.stale for f in self.folds)


def run_probe(probe: Probe, policy: HarnessPolicy, memory: bool, out: Path, sandbox: str = "local") -> ProbeRun:
    model = Watching(probe)
    boxes: list[Sandbox] = []

    def start_sandbox(workspace: Path) -> Sandbox:
        box = open_sandbox(SandboxSpec.parse(sandbox), workspace)
        boxes.append(box)
        return box

    def world(state: RunState, done) -> None:
        for path, content in probe.changes.get(state.step, {}).items():
            boxes[0].write_file(path, content.encode())

    task = Task(id=probe.name, prompt=probe.prompt, files=probe.files, setup=probe.setup)
    rules = forced(policy, memory)
    spec = RunSpec(task, model, rules, out, sandbox=start_sandbox, stop_rules=(world,))
    with open_run(spec) as session:
        run(session, summariser=ExtractiveSummariser(counter_for(session.model)))
        run_dir = session.journal.dir
    result = ProbeRun(probe.name, policy.name, memory, run_dir)
    for e in read_events(run_dir):
        if not (isinstance(e, Compacted) and e.fold is not None) or e.step >= len(model.prompts):
            continue  # no fold, or the run ended right after it: no prompt to judge
        latest, older = probe.latest(e.step)
        if latest is not None:
            result.folds.append(check_fold(e.step, model.prompts[e.step], latest, older))
    return result


def run_suite(
    probes: Sequence[Probe], policies: Sequence[HarnessPolicy], out: Path | None = None, sandbox: str = "local"
) -> list[ProbeRun]:
    """Every probe under every policy, with the memory on and off."""
    root = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="probes-"))
    return [
        run_probe(probe, policy, memory, root / f"{policy.name}-{'on' if memory else 'off'}", sandbox)
        for policy in policies
        for memory in (True, False)
        for probe in probes
    ]
