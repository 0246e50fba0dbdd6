"""The run's side of one connection's calls, made one at a time: who answers what the server asks during a call.

During a call a server may ask a question (elicitation: tools/mcp/elicitation.py), ask for a completion
(sampling: tools/mcp/sampling.py), say how far it has got (progress) or hand back a task instead of its result
(tools/mcp/tasks.py). Each is answered here from the call now running (`Current`): its recorded answers, and its
host, the run's side of the call (tools.base.CallHost), which journals, asks the run's model and shows
progress. The host acts on the run's own thread: `on_caller` hands it a job there, while the caller waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.client.extension import ClaimContext
from mcp.client.session import ClientSession
from mcp.types import CallToolResult, CreateMessageResult, ElicitResult, ErrorData

from core.mcp_settings import McpServer
from tools.base import CallHost, SamplingRefused
from tools.mcp.elicitation import CallInputs, Rule, answer, question
from tools.mcp.sampling import messages_of, not_allowed, refused, result_of
from tools.mcp.tasks import CreateTaskResult, TaskEnded, Wait, follow, gone, handle
from tools.mcp.text import describe, one_line

OnCaller = Callable[[Callable[[], Any]], Awaitable[Any]]  # run a job on the waiting caller's thread, await its value


@dataclass
class Current:
    tool: str  # its name on the server
    inputs: CallInputs | None
    host: CallHost | None
    on_caller: OnCaller | None
    timeout_s: float
    deadline: float  # time.monotonic()
    refused: str | None = None  # why the harness refused what the server asked (it then fails the call)


class Calls:
    def __init__(self, server: McpServer, rule: Rule):
        self.server = server
        self.rule = rule  # how a question that no recorded answer covers is answered
        self.current: Current | None = None

    async def _on_caller(self, job: Callable[[], Any]) -> Any:
        now = self.current
        if now is None or now.on_caller is None:
            return job()  # no caller waits (a test calling the connection directly): run it here
        return await now.on_caller(job)

    # -- the server's requests during a call -----------------------------------------------

    async def on_question(self, context: Any, params: Any) -> ElicitResult:
        inputs = self.current.inputs if self.current is not None else None
        given = answer(question(self.server.name, params), inputs, self.rule)
        return ElicitResult(action=given["action"], content=given["content"])

    async def on_sampling(self, context: Any, params: Any) -> CreateMessageResult | ErrorData:
        now = self.current
        host = now.host if now is not None else None
        refusal = not_allowed(self.server, host)
        if refusal is None and host is not None:
            try:
                messages = messages_of(params)
                reply = await self._on_caller(lambda: host.sample(self.server.name, messages, params.max_tokens))
                return result_of(reply)
            except SamplingRefused as e:
                refusal = refused(f"The harness refused it: {e}")
            except Exception as e:
                refusal = refused(f"The run's model could not answer it: {describe(e)}")
        assert refusal is not None
        if now is not None:
            now.refused = refusal.message
        return refusal

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        shown = one_line(message, 200)
        of = f"{progress:g} of {total:g}" if total else f"{progress:g}"
        await self.say(f"{shown} ({of})" if shown else of)

    async def say(self, text: str) -> None:
        host = self.current.host if self.current is not None else None
        if host is not None:
            await self._on_caller(lambda: host.progress(text))

    # -- tasks ---------------------------------------------------------------------------

    async def on_task(self, created: CreateTaskResult, claim: ClaimContext) -> CallToolResult:
        """The SDK's client got a task handle for the call now running: journal it, then wait for the task."""
        now = self.current
        if now is None:
            raise RuntimeError("a task handle arrived with no call running")
        if now.host is not None:
            host, kept = now.host, handle(created, self.server.name)
            await self._on_caller(lambda: host.started(kept))
        await self.say(f"running as task {one_line(created.task_id, 120)}")
        return await follow(claim.session, self._wait(now, created.task_id, claim.session), created)

    async def reattach(self, session: ClientSession, attached: dict[str, Any]) -> CallToolResult:
        """Follow the task an earlier process journaled for this call, instead of calling the tool again."""
        now = self.current
        assert now is not None
        wait = self._wait(now, str(attached["task_id"]), session)
        if attached.get("server") != self.server.name:
            raise TaskEnded(gone(wait, f"it was a task of MCP server {attached.get('server')}"))
        await self.say(f"following task {wait.shown} again")
        return await follow(session, wait)

    def _wait(self, now: Current, task_id: str, session: ClientSession) -> Wait:
        inputs = now.inputs
        return Wait(
            server=self.server.name,
            tool=now.tool,
            task_id=task_id,
            timeout_s=now.timeout_s,
            deadline=now.deadline,
            answer=session.dispatch_input_request,
            progress=self.say,
            waits_on_person=lambda: inputs is not None and bool(inputs.unanswered),
        )
