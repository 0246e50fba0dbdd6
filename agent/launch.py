"""Put a run together from user-level choices: task, model string, sandbox name, policy, output folder."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from core.errors import HarnessError
from core.events import Event
from agent.journal import Journal, RunInfo, new_run_id
from agent.loop import run
from agent.models import load_model
from agent.models.base import ModelClient
from core.policy import HarnessPolicy
from agent.summary import Summary
from agent.task import Task
from sandboxes.base import Sandbox
from tools.base import Registry
from tools.builtin import standard_tools
from tools.mcp import with_mcp

SANDBOXES = ("local", "docker", "docker:IMAGE")


def make_sandbox(name: str, workdir: Path) -> Sandbox:
    kind, _, image = name.partition(":")
    if name == "local":
        from sandboxes.local import LocalSandbox

        return LocalSandbox(workdir)
    if kind == "docker":
        from sandboxes.docker import DockerSandbox, DockerUnavailable
        from sandboxes.docker_options import DockerOptions

        try:
            return DockerSandbox.start(DockerOptions(image=image) if image else None)
        except DockerUnavailable as e:
            raise HarnessError(f"The Docker sandbox cannot start: {e}.") from None
    raise HarnessError(f"Unknown sandbox {name!r}; choose one of: {', '.join(SANDBOXES)}.")


def prepare(task: Task, sandbox: Sandbox, timeout_s: float) -> None:
    """Write the task's files and run its setup commands before the agent starts."""
    for path, content in task.files.items():
        sandbox.write_file(path, content.encode())
    for command in task.setup:
        result = sandbox.exec(command, timeout=timeout_s)
        if result.exit_code != 0:
            raise HarnessError(f"Task {task.id}: setup command `{command}` failed (exit {result.exit_code}):\n{result.output[-2000:]}")


def launch(
    task: Task,
    model: str | ModelClient,
    sandbox: str | Callable[[Path], Sandbox],
    policy: HarnessPolicy,
    out: Path,
    tools: Registry | None = None,
    listeners: tuple[Callable[[Event], None], ...] = (),
) -> tuple[Summary, Path]:
    """Run `task` to the end. `sandbox` is a name, or a factory given the run's workspace folder."""
    client = load_model(model) if isinstance(model, str) else model
    info = RunInfo(
        run_id=new_run_id(task.id),
        task=task.model_dump(mode="json"),
        model=client.name,
        sandbox=sandbox if isinstance(sandbox, str) else getattr(sandbox, "kind", "custom"),
        policy=policy.model_dump(mode="json"),
        seed=policy.model.seed,
        started_at=datetime.now(timezone.utc).isoformat(),
    )
    journal = Journal.create(out, info)
    journal.listeners.extend(listeners)
    workspace = journal.dir / "workspace"
    box = make_sandbox(sandbox, workspace) if isinstance(sandbox, str) else sandbox(workspace)
    try:
        prepare(task, box, policy.dispatch.tool_timeout_s)
        # MCP servers live as long as the run
        with with_mcp(policy.mcp, tools or standard_tools(), policy.mcp_max_tools) as registry:
            summary = run(task, client, registry, box, policy, journal)
    finally:
        box.close()
        journal.close()
    return summary, journal.dir
