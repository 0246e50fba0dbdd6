"""Taking a run that exists up again: a resume, the branch a resume builds for a fork, a replay's later lives.
Each gives a `Reopening` and gets the same session from `reopen_run` that `agent.session.open_run` gives a new
run, from the run's recorded task, policy and tool set.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from agent.journal.store import Journal, RunInfo, read_events
from agent.journal.tools import record_tools
from agent.mcp_context import follow_again
from agent.memory_store import MemoryStore, kept_store, recorded_start
from agent.models.base import ModelClient
from agent.models.windows import context_window
from agent.parts import Session
from agent.run.stopping import StopRule
from agent.run.task import Task
from agent.session import SandboxFactory, code_tools, offered_tools, opening, prepare
from core.context_policy import check_window
from core.events import MemoryWritten, ResourceUpdated
from core.policy import HarnessPolicy
from memory.summariser import Summariser
from sandboxes.base import Sandbox
from tools.base import Registry, Tool
from tools.builtin import toolset
from tools.builtin.memory import with_memory
from tools.mcp import with_mcp


@dataclass(frozen=True)
class Reopening:
    """What a caller gives, beside the run's folder and model, to take a run that exists up again: one value for
    every way a run is taken up (a resume, the branch a resume builds for a fork, a replay's later lives), so each
    opens the same session and loop from it. `tools` and `sandbox`: for runs whose tools or sandbox live in code;
    `summariser`: who compaction asks (default: the run's model); `clock`: what dates memory entries; `updates`: a
    replay's recorded resource updates (Session.updates); `programs`: a replay's run_code that plays a fork's parent's
    programs back while its branch is built, where `tools` offers none (a fork in calls mode of a run in code mode);
    `placed`: a replay's placed resources' text, for a run that begins again."""

    tools: Registry | None = None
    sandbox: SandboxFactory | None = None
    stop_rules: Sequence[StopRule] = ()
    summariser: Summariser | None = None
    clock: Callable[[], float] = time.time
    updates: deque[ResourceUpdated] | None = None
    programs: Tool | None = None
    placed: str | None = None  # a replay's placed resources' text, for a run that begins again (RunSpec.placed)


@contextmanager
def reopen_run(
    info: RunInfo, journal: Journal, model: ModelClient, sandbox: Sandbox, how: Reopening, begins: bool = False
) -> Iterator[Session]:
    """An existing run again (resume): its recorded task, policy and tool set, with MCP servers reconnected.
    The sandbox is the caller's (reconnected or recreated); it is closed here. `begins`: the run stopped before its
    first step and begins again: it opens as open_run opens it (the task's files and setup put in the sandbox, the
    task made again from its MCP prompt, its repository map, its resources placed) and records its tools."""
    policy = HarnessPolicy.model_validate(info.policy)
    task = Task.model_validate(info.task)
    store = None
    try:
        window = context_window(model, policy.model)  # the model may not be the one run.json names
        check_window(policy.context, window)
        if begins:
            prepare(task, sandbox, policy.dispatch.tool_timeout_s)
        base = code_tools(how.tools if how.tools is not None else toolset(info.toolset), policy.code_tools)
        if info.memory is not None:  # the store as the journal left it
            written = [e for e in read_events(journal.dir) if isinstance(e, MemoryWritten)]
            start, kept = recorded_start(journal.dir, info.memory), kept_store(info.memory)
            store = MemoryStore(start, info.run_id, task.id, journal, how.clock, written=written, kept=kept)
            base = with_memory(base, store, policy.memory)
        with with_mcp(
            policy.mcp, base, policy.mcp_max_tools, policy.approval.elicitation, policy.mcp_read_resource
        ) as registry:
            context = ""
            if begins:
                task, context = opening(registry, task, info.mcp_prompt, policy, sandbox, how.placed)
            else:
                follow_again(registry, [*policy.mcp_resources, *task.resources], task, read_events(journal.dir))
            offered, program_tools = offered_tools(registry, policy, sandbox)
            if begins:
                record_tools(
                    journal, info.model_copy(update={"task": task.model_dump(mode="json")}), offered, program_tools
                )
            yield Session(
                task=task,
                policy=policy,
                model=model,
                journal=journal,
                sandbox=sandbox,
                tools=offered,
                stop_rules=how.stop_rules,
                price=info.price,
                context_window=window,
                memory=store,
                program_tools=program_tools,
                updates=how.updates,
                context=context,
            )
    finally:
        sandbox.close()
        if store is not None:
            store.save()
