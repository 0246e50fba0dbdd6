"""The run's side of one tool call whose work goes on outside the harness (tools.base.CallHost), as the
dispatcher makes it for each call: the handle of work the call leaves running (an MCP server's task) journaled
as `task_created`, the handle an earlier process journaled for the call (which a resumed call follows instead of
calling again), the run's model for the call's sampling requests (agent/sampling.py), and its progress told to
the journal's listeners as `tool_progress`, never written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.journal.store import Journal
from agent.sampling import Sampling
from core.events import TaskCreated, ToolProgress
from core.types import Message, ModelReply
from tools.base import SamplingRefused

HANDLE = ("server", "task_id", "status", "created_at", "ttl_ms", "poll_interval_ms")


@dataclass(frozen=True)
class JournaledCall:
    journal: Journal
    step: int
    call_id: str
    tool: str
    handle: TaskCreated | None = None  # journaled by an earlier process for this call
    sampling: Sampling | None = None  # None: the run's model is not at hand (a dispatcher without a loop)

    def started(self, handle: dict[str, Any]) -> None:
        self.journal.append(TaskCreated(step=self.step, call_id=self.call_id, tool=self.tool, **handle))

    def attached(self) -> dict[str, Any] | None:
        return self.handle.model_dump(include=set(HANDLE)) if self.handle is not None else None

    def sample(self, server: str, messages: list[Message], max_tokens: int) -> ModelReply:
        if self.sampling is None:
            raise SamplingRefused("no model is attached to this call")
        return self.sampling(self.step, self.call_id, server, messages, max_tokens)

    def progress(self, text: str) -> None:
        self.journal.tell(ToolProgress(step=self.step, call_id=self.call_id, tool=self.tool, text=text))
