"""Start a new run from user-level choices: task, model string, sandbox name, policy, output folder.

The short form of agent.session's run builder, for the common case."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.models.base import ModelClient
from agent.session import RunSpec, SandboxFactory, SandboxSpec, start
from agent.summary import Summary
from agent.task import Task
from core.events import Event
from core.policy import HarnessPolicy
from tools.base import Registry


def launch(
    task: Task,
    model: str | ModelClient,
    sandbox: str | SandboxFactory,
    policy: HarnessPolicy,
    out: Path,
    tools: Registry | None = None,
    listeners: tuple[Callable[[Event], None], ...] = (),
) -> tuple[Summary, Path]:
    """Run `task` to the end. `sandbox` is a name (see session.SANDBOXES), or a factory given the run's workspace."""
    box = SandboxSpec.parse(sandbox) if isinstance(sandbox, str) else sandbox
    return start(RunSpec(task, model, policy, Path(out), sandbox=box, tools=tools, listeners=listeners))
