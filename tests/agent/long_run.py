"""A long run for the snapshot-size test and the resume benchmark: N cheap steps under a bounded context.

Each step notes a new value with an in-process read tool, so the run is as long as
asked without a subprocess per step; the context policy masks all but the newest
tool outputs. The last step writes a file that needs approval, so the run stops
awaiting it: a realistic point to resume from.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from agent.journal.summary import Summary
from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import MaskObservations
from core.events import Event
from core.policy import ApprovalPolicy, CheckpointPolicy, HarnessPolicy, StopPolicy
from tests.agent.helpers import call
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult
from tools.builtin import STANDARD


class NoteArgs(BaseModel):
    value: int


def note(args: NoteArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult(f"noted {args.value}")


NOTE = Tool("note", "Note a value.", "Note a value for later.", NoteArgs, Effect.READ, note)


def policy(steps: int, snapshot_every: int) -> HarnessPolicy:
    return HarnessPolicy(
        name="long",
        stop=StopPolicy(max_steps=steps + 1),
        context=[MaskObservations(keep_last=5)],
        approval=ApprovalPolicy(per_tool={"write_file": "always"}),
        checkpoint=CheckpointPolicy(snapshot_every=snapshot_every),
    )


def script(steps: int) -> list:
    notes = [call("note", value=i) for i in range(1, steps)]
    return notes + [call("write_file", path="done.txt", content="done\n"), call("submit", answer="done")]


def tools() -> Registry:
    return Registry.of([NOTE, *STANDARD])


def long_run(
    out: Path, steps: int, snapshot_every: int = 10, listeners: tuple[Callable[[Event], None], ...] = ()
) -> tuple[Summary, Path]:
    """A run of `steps` steps that stops awaiting approval of its last one."""
    return start(
        RunSpec(
            Task(id="long", prompt="Note the numbers from 1 up, then write done.txt and submit."),
            ScriptedModel(script(steps)),
            policy(steps, snapshot_every),
            out,
            tools=tools(),
            listeners=listeners,
        )
    )


def fast_dir() -> str | None:
    """A tmpfs folder when the machine has one: the journal fsyncs every event, which is all the run
    costs on a slow disk, and a test of snapshot sizes or a benchmark of resume needs no disk."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
