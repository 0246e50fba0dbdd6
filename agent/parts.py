"""What one run's loop works with: the open run (`Session`, which agent.session builds) and the loop's parts
between steps (`Loop`). Data only: the loop (agent.loop) and its overflow recovery (agent.overflow) act on them."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent.dispatch import Dispatcher
from agent.journal.store import Journal
from agent.memory_store import MemoryStore
from agent.models.base import ModelClient
from agent.models.pricing import Price
from agent.prompt_digest import PromptDigest
from agent.recovery.approval import Decision
from agent.run.state import RunState
from agent.run.stopping import StopRule
from agent.run.task import Task
from core.events import ResourceUpdated
from core.policy import HarnessPolicy
from memory.render import Renderer
from memory.summariser import Summariser
from memory.tokens import PromptAccounting
from sandboxes.base import Sandbox
from tools.base import Registry, Tool


@dataclass(kw_only=True)
class Session:
    """An open run (agent.session builds it): its journal, sandbox, model and the tools it offers."""

    task: Task
    policy: HarnessPolicy
    model: ModelClient
    journal: Journal
    sandbox: Sandbox
    tools: Registry
    stop_rules: Sequence[StopRule] = ()
    price: Price | None = None  # the model's price, recorded in run.json: every call is priced as it is journaled
    context_window: int | None = None  # tokens, as agent.models.windows resolved them; None: unknown, unchecked
    context: str = ""  # what the host placed before the task in the opening prompt (MCP resources, agent.mcp_context)
    memory: MemoryStore | None = None  # the notes the agent keeps (the memory tool's store); None: it keeps none
    program_tools: Registry | None = None  # those a run_code program may call (agent.program_calls.offer); None: none
    # A replay's: the recording's resource updates not yet made, appended at their steps instead of the servers'
    # (agent.mcp_context); shared by the replay's lives. None: the servers' own, as they come.
    updates: deque[ResourceUpdated] | None = None


@dataclass(kw_only=True)
class Loop:
    """What one run's loop works with between steps, beside its state: the dispatcher (with the tools it
    validates calls against), the tools as the model is shown them, the approvals given, and the renderer,
    accounting and summariser that keep their caches."""

    session: Session
    state: RunState
    dispatcher: Dispatcher
    shown: Sequence[Tool]
    approvals: Mapping[str, bool | Decision]
    renderer: Renderer
    accounting: PromptAccounting
    summariser: Summariser
    digest: PromptDigest
