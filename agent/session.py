"""The one run builder: a run spec opens everything a run needs, and one place closes it.

`harness run`, resume, replay, chess games and SWE instances all open their runs here,
so each gets the policy's MCP servers, a sandbox of the recorded kind (image and
workdir included), and a run.json that records the tool set offered to the model.

    with open_run(spec) as session:
        summary = run(session)

or, in one call, `start(spec)`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agent.journal.store import Journal, RunInfo, new_run_id, read_events, read_run_info
from agent.journal.summary import Summary, summarize
from agent.journal.tools import record_tools
from agent.loop import run
from agent.mcp_context import placed, prompt_task, prompt_without_servers, resources_without_servers
from agent.memory_store import MemorySource, MemoryStore, keep_start, starting_ledger
from agent.models import client_for
from agent.models.base import ModelClient
from agent.models.pricing import price_for
from agent.models.spec import is_local
from agent.models.windows import context_window
from agent.parts import Session
from agent.program_calls import offer
from agent.run.stopping import StopRule
from agent.run.task import Task
from agent.telemetry import live_spans
from core.context_policy import RepoMap, check_window
from core.errors import HarnessError
from core.events import Event, ResourceUpdated, RunStopped, SandboxOpened
from core.interrupts import Abandoned, signals_handled
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from core.presets import PRESETS, load_policy, memory_on
from sandboxes.base import Sandbox
from sandboxes.none import NoSandbox
from tools.base import Registry
from tools.builtin import toolset
from tools.builtin.memory import with_memory
from tools.mcp import with_mcp

SANDBOXES = ("local", "docker", "docker:IMAGE")


class SandboxSpec(BaseModel):
    """Where a run's tools act; recorded in run.json, so a resume reopens the same kind, image and workdir."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["local", "docker", "none"] = "local"
    image: str | None = None  # docker: a local image (default: the base image)
    workdir: str | None = None  # docker: where commands start (default: the image's /workspace volume)
    env: dict[str, str] = {}  # docker: variables set over the sandbox's defaults (a task image's PATH)
    options: dict[str, Any] = {}  # docker: DockerOptions fields over the defaults (a Harbor task's network, limits)

    @classmethod
    def parse(cls, text: str) -> SandboxSpec:
        kind, _, image = text.partition(":")
        if text in ("local", "none", "docker") or (kind == "docker" and image):
            return cls(kind=kind, image=image or None)
        raise HarnessError(f"Unknown sandbox {text!r}; choose one of: {', '.join(SANDBOXES)}.")


def policy_for(name_or_path: str | None, model: str) -> HarnessPolicy:
    """The policy a user named, or the default for the model: `local` for the embedded engine, else `default`."""
    if name_or_path is not None:
        return load_policy(name_or_path)
    return PRESETS["local" if is_local(model) else "default"]


def open_sandbox(spec: SandboxSpec, workspace: Path) -> Sandbox:
    if spec.kind == "local":
        from sandboxes.local import LocalSandbox

        return LocalSandbox(workspace)
    if spec.kind == "none":
        from sandboxes.none import NoSandbox

        return NoSandbox()
    from sandboxes.docker import DockerSandbox
    from sandboxes.docker_container import DockerUnavailable
    from sandboxes.docker_options import DockerOptions

    given = {k: v for k, v in (("image", spec.image), ("workdir", spec.workdir)) if v is not None}
    options = DockerOptions(**{**spec.options, **given})
    options = options.model_copy(update={"env": {**options.env, **spec.env}})
    try:
        return DockerSandbox.start(options, run_dir=workspace.parent)  # labelled with its run, so resume finds it
    except DockerUnavailable as e:
        raise HarnessError(f"The Docker sandbox cannot start: {e}.") from None


SandboxFactory = Callable[[Path], Sandbox]


@dataclass
class RunSpec:
    """Everything that decides a run. `sandbox` may be a factory given the run's workspace folder
    (tests, custom sandboxes); `tools` replaces the named tool set with live tools (a chess game's)."""

    task: Task
    model: str | ModelClient
    policy: HarnessPolicy
    out: Path
    sandbox: SandboxSpec | SandboxFactory = field(default_factory=SandboxSpec)
    toolset: str = "standard"
    tools: Registry | None = None
    mcp: Sequence[McpServer] = ()  # servers named on the command line, beside the policy's own
    prompt: tuple[str, dict[str, str]] | None = (
        None  # SERVER:NAME of an MCP prompt the task is built from, its arguments
    )
    run_id: str | None = None
    seed: int | None = None  # default: the policy's model seed
    listeners: Sequence[Callable[[Event], None]] = ()
    stop_rules: Sequence[StopRule] = ()
    prices: Path | None = None  # the price table the model's price comes from; default: agent/models/prices.toml
    memory: MemorySource | None = None  # the agent's memory: given, or the policy's `memory.tool`, turns it on
    placed: str | None = None  # the placed MCP resources' text as a recording has it (a replay's), not read anew
    updates: deque[ResourceUpdated] | None = None  # and their recorded updates, given at their steps (Session.updates)


@contextmanager
def open_run(spec: RunSpec) -> Iterator[Session]:
    """Create the run directory, start the sandbox, prepare the task, connect MCP servers, record the tools.

    Anything of that which fails (a sandbox that cannot start, a task setup command that fails, an MCP server
    that does not connect) ends the run as `environment_error`, journaled and summarised like any stop, so the
    run folder has its summary.json; the error is raised (a sandbox's as HarnessError).

    Everything opened here is closed here, on every way out (an error, Ctrl-C): the MCP servers, the sandbox,
    the journal, and the model when `spec.model` is a model string (a client passed in is its maker's)."""
    abandon = spec.policy.checkpoint.on_signal == "abandon"
    with (
        signals_handled(abandon),
        client_for(spec.model, spec.policy.dispatch.tool_timeout_s) as client,
        _opened(spec, client) as session,
    ):
        yield session


@contextmanager
def _opened(spec: RunSpec, client: ModelClient) -> Iterator[Session]:
    policy = spec.policy.model_copy(update={"mcp": [*spec.policy.mcp, *spec.mcp]}) if spec.mcp else spec.policy
    if spec.seed is not None:  # the seed a run records is the one its model samples with
        policy = policy.model_copy(update={"model": policy.model.model_copy(update={"seed": spec.seed})})
    price = price_for(client.name, spec.prices, policy.stop.max_cost_usd)
    window = context_window(client, policy.model)
    check_window(policy.context, window)  # before anything is journaled: a "80%" budget needs the window
    if isinstance(spec.sandbox, SandboxSpec):
        check_code_sandbox(policy, has_sandbox=spec.sandbox.kind != "none")
    named = [*policy.mcp_resources, *spec.task.resources]
    if named and not policy.mcp:  # refused before the run directory exists, as placed() would after
        raise resources_without_servers(named)
    if spec.prompt is not None and not policy.mcp:
        raise prompt_without_servers(spec.prompt[0])
    source = spec.memory if spec.memory is not None else MemorySource() if policy.memory.tool else None
    if source is not None and not policy.memory.tool:
        policy = memory_on(policy)  # named NAME+memory: an A/B tells the runs with a memory from those without
    start, memory = starting_ledger(source, spec.task.id) if source is not None else ([], None)
    sandbox = spec.sandbox if isinstance(spec.sandbox, SandboxSpec) else None
    info = RunInfo(
        run_id=spec.run_id or new_run_id(spec.task.id),
        task=spec.task.model_dump(mode="json"),
        model=client.name,
        sandbox=sandbox.kind if sandbox else getattr(spec.sandbox, "kind", "custom"),
        image=sandbox.image if sandbox else None,
        workdir=sandbox.workdir if sandbox else None,
        env=sandbox.env if sandbox else {},
        sandbox_options=sandbox.options if sandbox else {},
        toolset=spec.toolset,
        policy=policy.model_dump(mode="json"),
        seed=policy.model.seed,
        context_window=window,
        started_at=datetime.now(UTC).isoformat(),
        price=price,
        memory=memory,
        mcp_prompt=spec.prompt,
    )
    journal = Journal.create(spec.out, info)
    if source is not None:
        keep_start(journal, start)  # first of all: a resume and a replay start from this very ledger
    journal.listeners.extend(spec.listeners)
    spans = live_spans(info)  # OpenTelemetry spans as the run goes, where an OTLP endpoint is set
    if spans is not None:
        journal.listeners.append(spans)
    opened = time.monotonic()
    running = False  # from here on an exception is the run's own, not its environment's
    store = None
    try:
        box = _start_sandbox(spec.sandbox, journal)
        try:
            prepare(spec.task, box, policy.dispatch.tool_timeout_s)
            base = code_tools(spec.tools if spec.tools is not None else toolset(spec.toolset), policy.code_tools)
            if source is not None:
                store = MemoryStore(start, info.run_id, spec.task.id, journal, source.clock, kept=source.kept)
                base = with_memory(base, store, policy.memory)
            # MCP servers live as long as the run
            with with_mcp(
                policy.mcp, base, policy.mcp_max_tools, policy.approval.elicitation, policy.mcp_read_resource
            ) as registry:
                task, context = opening(registry, spec.task, spec.prompt, policy, box, spec.placed)
                info = info.model_copy(update={"task": task.model_dump(mode="json")})
                offered, program_tools = offered_tools(registry, policy, box)
                record_tools(journal, info, offered, program_tools)
                running = True
                yield Session(
                    task=task,
                    policy=policy,
                    model=client,
                    journal=journal,
                    sandbox=box,
                    tools=offered,
                    stop_rules=spec.stop_rules,
                    price=price,
                    context_window=info.context_window,
                    context=context,
                    memory=store,
                    program_tools=program_tools,
                    updates=spec.updates,
                )
        finally:
            box.close()
            if store is not None:
                store.save()  # what the run wrote joins the kept store, each time the run stops
    except BaseException as e:  # BaseException: a signal's stop while the sandbox is prepared is a stop too
        if not running:
            _environment_failed(journal, e, time.monotonic() - opened)
        raise
    finally:
        journal.close()
        if spans is not None:
            spans.close()


def opening(
    registry: Registry,
    task: Task,
    prompt: tuple[str, dict[str, str]] | None,
    policy: HarnessPolicy,
    sandbox: Sandbox,
    recorded: str | None,
) -> tuple[Task, str]:
    """The task as the run opens with it (made from an MCP prompt, with its repository map) and what is placed
    before it from MCP resources (`recorded`: a replay's placed text, not read anew)."""
    task = task if prompt is None else prompt_task(registry, *prompt, task)
    task = with_repo_map(task, policy, sandbox)
    named = [*policy.mcp_resources, *task.resources]
    return task, recorded if recorded is not None else placed(registry, named, task)


def with_repo_map(task: Task, policy: HarnessPolicy, sandbox: Sandbox) -> Task:
    """The task with the repository map the policy's repo_map step asks for, made now that the sandbox holds the
    task's files; a task that already carries one (a replay's) keeps its own."""
    maps = [s for s in policy.context if isinstance(s, RepoMap)]
    if not maps or task.repo_map is not None:
        return task
    from tools.code.tools import opening_map  # the code index's libraries load only for runs that use it

    made = [opening_map(step, sandbox, task.prompt, policy.dispatch.tool_timeout_s) for step in maps]
    return task.model_copy(update={"repo_map": "\n\n".join(made)})


def offered_tools(tools: Registry, policy: HarnessPolicy, sandbox: Sandbox) -> tuple[Registry, Registry | None]:
    """The tools the model is offered under `dispatch.mode`, and those a run_code program may call."""
    check_code_sandbox(policy, has_sandbox=not isinstance(sandbox, NoSandbox))
    return offer(tools, policy)


def check_code_sandbox(policy: HarnessPolicy, has_sandbox: bool) -> None:
    """A run_code program runs in the run's sandbox: a run without one (a chess game's, unless given one) cannot
    be in code mode. Checked before anything is made, and again on the sandbox opened."""
    if policy.dispatch.mode != "calls" and not has_sandbox:
        raise HarnessError(
            f"The policy {policy.name!r} has dispatch.mode = {policy.dispatch.mode!r}: the model's run_code programs "
            "run in the run's sandbox, and this run has none. Give it one (--sandbox local or docker), or use a "
            'policy with dispatch.mode = "calls".'
        )


def code_tools(tools: Registry, names: Sequence[str]) -> Registry:
    """The tool set with the policy's code tools (tools/code) added."""
    if not names:
        return tools
    from tools.code.tools import with_code_tools

    return with_code_tools(tools, names)


def _start_sandbox(sandbox: SandboxSpec | SandboxFactory, journal: Journal) -> Sandbox:
    workspace = journal.dir / "workspace"
    try:
        box = open_sandbox(sandbox, workspace) if isinstance(sandbox, SandboxSpec) else sandbox(workspace)
    except Exception as e:  # the environment failed, not the agent
        raise HarnessError(f"The sandbox could not be started: {e}") from None
    container = getattr(box, "container_id", None)
    if container is not None:
        journal.append(SandboxOpened(container_id=container))
    return box


def _environment_failed(journal: Journal, error: BaseException, wall_s: float) -> None:
    """The run stopped before its first step: journal why and write its summary. A run folder that cannot take
    them (a full disk) must not hide the error that stopped the run, so that failure is left unsaid. A signal's
    stop (or Ctrl-C) is `interrupted`: the run begins again when resumed."""
    if isinstance(error, Abandoned | KeyboardInterrupt):
        name = error.signal_name if isinstance(error, Abandoned) else "SIGINT"
        reason, message = "interrupted", f"Stopped by {name} while the run was being opened; it has not begun."
    else:
        reason = "environment_error"
        message = str(error) if isinstance(error, HarnessError) else f"{type(error).__name__}: {error}"
    with suppress(HarnessError):
        journal.append(RunStopped(reason=reason, message=message))
        journal.write_summary(summarize(read_events(journal.dir), read_run_info(journal.dir), wall_s))


def prepare(task: Task, sandbox: Sandbox, timeout_s: float) -> None:
    """Write the task's files and run its setup commands before the agent starts."""
    for path, content in task.files.items():
        sandbox.write_file(path, content.encode())
    for command in task.setup:
        result = sandbox.exec(command, timeout=timeout_s)
        if result.exit_code != 0:
            raise HarnessError(
                f"Task {task.id}: setup command `{command}` failed (exit {result.exit_code}):\n{result.output[-2000:]}"
            )


def recorded_sandbox(info: RunInfo, doing: str) -> SandboxSpec:
    """The sandbox a run recorded; a custom factory's cannot be rebuilt, so `doing` it needs code."""
    if info.sandbox not in ("local", "docker", "none"):
        raise HarnessError(
            f"Run {info.run_id} used a custom sandbox ({info.sandbox}); {doing} it from code, "
            "passing the same sandbox factory."
        )
    return SandboxSpec(
        kind=info.sandbox, image=info.image, workdir=info.workdir, env=info.env, options=info.sandbox_options
    )


def start(spec: RunSpec) -> tuple[Summary, Path]:
    """Open the run, run it to a stop, close it."""
    with open_run(spec) as session:
        return run(session), session.journal.dir
