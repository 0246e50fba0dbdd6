"""Long-running tool calls: the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of 2026-07-28.

A server with long work to do for a call may answer `tools/call` with a task handle (`resultType: "task"`)
instead of its result, to a client that declared the extension on the request: the SDK declares it on every
request of a 2026-07-28 connection while the claim below is active (a 2025-11-25 connection never gets a
handle). The harness journals the handle through the call's host before it waits; polls `tasks/get` at the
server's interval, saying the task's status message as the call's progress; answers the questions and sampling
requests a task asks (`input_required`) through the same callbacks as a direct call's, sent back with
`tasks/update`; and sends `tasks/cancel` when the call runs past its timeout or the run is stopped.

A run killed while it waits is resumed by following the journaled handle (re-attaching): the tool is not called
again. A task the server no longer knows (its process ended, its time to live passed) gives one observation that
says so. Everything a server says here is untrusted: ids and numbers are bounded, its words cleaned and defused.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from mcp import MCPError
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.types import CallToolResult, ErrorData
from mcp_types import INVALID_PARAMS, InputRequests, Request, RequestParams, Result
from pydantic import Field, TypeAdapter, ValidationError

from tools.base import ToolResult
from tools.mcp.text import one_line, said

TASKS = "io.modelcontextprotocol/tasks"
POLL_S = (0.1, 5.0)  # the server's pollIntervalMs, kept within these bounds
DEFAULT_POLL_S = 0.5
CANCEL_WAIT_S = 5.0  # how long the harness waits for the server to acknowledge a cancellation
TERMINAL = ("completed", "failed", "cancelled")
_REQUESTS = TypeAdapter(InputRequests)


class _Task(Result):
    task_id: str = Field(max_length=512)
    status: str = Field(max_length=64)
    status_message: str | None = None
    created_at: str | None = Field(None, max_length=64)
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class CreateTaskResult(_Task):
    """The answer to `tools/call` that hands back a task instead of the result."""

    result_type: Literal["task"] = "task"


class TaskState(_Task):
    """A task as `tasks/get` reports it: with its result, its error or the input it waits for."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class _TaskParams(RequestParams):
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _GetTask(Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"  # Streamable HTTP: the Mcp-Name header routes the request to the task's holder


class _UpdateTask(Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class _CancelTask(Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


Resolve = Callable[[CreateTaskResult, Any], Awaitable[CallToolResult]]


class Tasks(ClientExtension):
    """The extension as the SDK's client takes it: a `tools/call` answered with a task goes to `resolve`."""

    identifier = TASKS

    def __init__(self, resolve: Resolve):
        self.resolve = resolve

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]


class TaskEnded(Exception):
    """A task that ended without a tool result to show as one (failed, cancelled, timed out, gone, waiting on a
    person): its observation."""

    def __init__(self, result: ToolResult):
        super().__init__(result.text)
        self.result = result


@dataclass
class Wait:
    """One call's wait on its task: whose task, until when, and what answers the task's input requests and hears
    its progress (both run by the connection)."""

    server: str
    tool: str
    task_id: str
    timeout_s: float
    deadline: float  # time.monotonic()
    answer: Callable[[ClientRequestContext, Any], Awaitable[Any]]  # an input request -> its response or ErrorData
    progress: Callable[[str], Awaitable[None]]
    waits_on_person: Callable[[], bool]  # a question went unanswered: stop waiting, leave the task as it is
    answered: set[str] = field(default_factory=set)

    @property
    def shown(self) -> str:
        """The task's id as a message may show it: the server chose it."""
        return one_line(self.task_id, 120)


def handle(created: CreateTaskResult, server: str) -> dict[str, Any]:
    """What the journal keeps of a new task (core.events.TaskCreated's fields beside the call's)."""
    return {
        "server": server,
        "task_id": created.task_id,
        "status": created.status,
        "created_at": created.created_at,
        "ttl_ms": created.ttl_ms,
        "poll_interval_ms": created.poll_interval_ms,
    }


async def follow(session: ClientSession, wait: Wait, first: _Task | None = None) -> CallToolResult:
    """Poll the task until it ends; its tool result, or TaskEnded with the observation to give instead.
    `first`: the handle the call was answered with (its poll interval is waited first); None to ask the server at
    once (a resumed call re-attaching)."""
    said_last, pause = "", _interval(first) if first is not None else 0.0
    try:
        while True:
            remaining = wait.deadline - time.monotonic()
            if remaining <= 0:
                raise TaskEnded(await _timed_out(session, wait))
            await anyio.sleep(min(pause, remaining))
            state = await _get(session, wait)
            message = one_line(state.status_message, 200)
            if message and message != said_last:
                said_last = message
                await wait.progress(message)
            if state.status in TERMINAL:
                return _ended(state, wait)
            if state.status == "input_required":
                await _answer(session, wait, state)
                if wait.waits_on_person():
                    raise TaskEnded(ToolResult(f"Task {wait.shown} waits for a person's answer.", ok=False))
            pause = _interval(state)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):  # the run is being stopped: the task must not go on unwatched
            await cancel(session, wait.task_id)
        raise


async def _get(session: ClientSession, wait: Wait) -> TaskState:
    within = max(1.0, min(30.0, wait.deadline - time.monotonic() + 1.0))
    try:
        return await session.send_request(
            _GetTask(params=_TaskParams(task_id=wait.task_id)), TaskState, request_read_timeout_seconds=within
        )
    except MCPError as e:
        if e.code == INVALID_PARAMS:
            raise TaskEnded(gone(wait, said(e.message))) from None
        raise
    except ValidationError as e:
        raise TaskEnded(
            ToolResult(
                f"Task {wait.shown} of {wait.tool} on MCP server {wait.server} answered tasks/get with something "
                f"that is not a task ({e.error_count()} problems); the call's outcome is unknown.",
                ok=False,
            )
        ) from None


def gone(wait: Wait, why: str) -> ToolResult:
    return ToolResult(
        f"{wait.tool} was running as task {wait.shown} on MCP server {wait.server} when the run stopped, and the "
        f"server no longer knows that task ({why}). The call was not repeated: whether it took effect is unknown. "
        "Check its effect before calling it again.",
        ok=False,
    )


def _ended(state: TaskState, wait: Wait) -> CallToolResult:
    if state.status == "completed":
        try:
            return CallToolResult.model_validate(state.result or {}, by_name=False)
        except ValidationError:
            raise TaskEnded(
                ToolResult(
                    f"Task {wait.shown} of {wait.tool} completed with a result that is not a tool result.", ok=False
                )
            ) from None
    message = one_line(state.status_message, 300)
    if state.status == "failed":
        error = state.error or {}
        code = error.get("code") if isinstance(error.get("code"), int) else "?"
        reason = said(str(error.get("message") or message or "no reason given"))
        text = f"{wait.tool} on MCP server {wait.server} failed as task {wait.shown} (error {code}): {reason}"
        raise TaskEnded(ToolResult(text, ok=False))
    why = f": {message}" if message else ""
    raise TaskEnded(
        ToolResult(
            f"Task {wait.shown} of {wait.tool} on MCP server {wait.server} was cancelled before it finished{why}. "
            "What it did before is unknown: check before calling it again.",
            ok=False,
        )
    )


async def _answer(session: ClientSession, wait: Wait, state: TaskState) -> None:
    """Answer the task's input requests not answered yet, through the callbacks a direct call's go through."""
    try:
        requests = _REQUESTS.validate_python(state.input_requests or {}, by_name=False)
    except ValidationError:
        await cancel(session, wait.task_id)
        raise TaskEnded(
            ToolResult(
                f"Task {wait.shown} of {wait.tool} on MCP server {wait.server} asked for input the harness cannot "
                "read; the task was cancelled.",
                ok=False,
            )
        ) from None
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        if key in wait.answered:
            continue  # a request is shown once, however often the polls repeat it
        wait.answered.add(key)
        response = await wait.answer(ClientRequestContext(session=session, request_id=key), request)
        if isinstance(response, ErrorData):  # a request the harness refuses (sampling not allowed): nothing can go on
            await cancel(session, wait.task_id)
            raise TaskEnded(
                ToolResult(
                    f"Task {wait.shown} of {wait.tool} on MCP server {wait.server} asked for "
                    f"{request.method}, which the harness refused: {response.message} The task was cancelled.",
                    ok=False,
                )
            )
        if not wait.waits_on_person():
            responses[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
    if responses:
        await session.send_request(
            _UpdateTask(params=_UpdateParams(task_id=wait.task_id, input_responses=responses)), Result
        )


async def _timed_out(session: ClientSession, wait: Wait) -> ToolResult:
    acknowledged = await cancel(session, wait.task_id)
    asked = "the server acknowledged" if acknowledged else "the server did not acknowledge"
    return ToolResult(
        f"{wait.tool} on MCP server {wait.server} ran as task {wait.shown} for {wait.timeout_s:g} s without "
        f"finishing. The harness asked the server to cancel it ({asked}), but what it did before is unknown: "
        "check its effect before calling it again.",
        ok=False,
        timed_out=True,
    )


async def cancel(session: ClientSession, task_id: str) -> bool:
    """Ask the server to cancel a task; whether it acknowledged within CANCEL_WAIT_S."""
    try:
        with anyio.fail_after(CANCEL_WAIT_S):
            await session.send_request(_CancelTask(params=_TaskParams(task_id=task_id)), Result)
        return True
    except Exception:  # gone, refused, too slow: the caller says what it knows
        return False


def _interval(state: _Task) -> float:
    if state.poll_interval_ms is None:
        return DEFAULT_POLL_S
    return min(max(state.poll_interval_ms / 1000, POLL_S[0]), POLL_S[1])
