"""One MCP server's session, owned by one task on the manager's event loop.

The SDK's client is an async context manager whose task groups must be entered
and left by the same task, so an owner task holds it open until told to stop.
Calls come from other tasks on the same loop. A crash is seen as a closed
connection (on a call, or earlier when the change-notification stream drops);
the server is then restarted at most `reconnects` times, and after that its
tools answer with the reason it is gone.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import warnings
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import Client, MCPError
from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ResourceUpdatedNotification, ToolListChangedNotification
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from core.mcp_settings import McpServer
from tools.base import CallHost, ToolResult
from tools.mcp.calls import Calls, Current, OnCaller
from tools.mcp.elicitation import CallInputs, Rule
from tools.mcp.lines import TOO_LONG
from tools.mcp.render import render
from tools.mcp.tasks import TaskEnded, Tasks
from tools.mcp.text import clean, defuse, describe, said
from tools.mcp.transport import needs_auth, new_client, open_within

MAX_PAGES = 1000  # a server whose cursor never ends cannot hang discovery
STOP_WAIT_S = 10.0  # the SDK's own stdio shutdown is bounded at about 5 s
STDERR_TAIL_CHARS = 600

Listed = Callable[[McpServer, list[Any]], None]  # (server, every mcp.types.Tool it lists now)
Report = Callable[[str], None]  # a problem worth telling the user that does not stop the server
Updated = Callable[[McpServer, str], None]  # (server, the URI of a subscribed resource that changed)


class Connection:
    def __init__(
        self,
        server: McpServer,
        listed: Listed,
        report: Report,
        updated: Updated | None = None,
        rule: Rule = "ask",
    ):
        self.server = server
        self.listed = listed
        self.report = report
        self.updated = updated
        self.calls = Calls(server, rule)  # what answers the server during the call running now
        self._scope: anyio.CancelScope | None = None  # the call running now, which a stop may abandon
        self.client: Client | None = None
        self.gone: str | None = None  # why this server cannot be used any more
        self.lost = False  # the connection dropped; restart before the next call
        self.unreadable: str | None = None  # the last message from the server that could not be parsed
        self.restarts_left = server.reconnects
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Future[None] | None = None
        self._owner: asyncio.Task | None = None
        self._errlog: Any = None
        self._changed = asyncio.Event()
        self._restarting = asyncio.Lock()
        self._tasks: Any = None  # the owner's task group, for subscriptions opened later

    # -- opening and closing ------------------------------------------------------------

    async def open(self) -> None:
        """Start the server, shake hands and list its tools; raises with a readable reason."""
        self._ready = ready = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") if self.server.command else None
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp:{self.server.name}")
        within = open_within(self.server)
        try:
            await asyncio.wait_for(asyncio.shield(ready), within)
        except TimeoutError:
            await self.close()
            unreadable = f"; {self.unreadable}" if self.unreadable else ""
            raise RuntimeError(f"no answer within {within:g} s{unreadable}{self._stderr()}") from None
        except Exception as e:
            stderr = self._stderr()
            await self.close()
            raise RuntimeError(f"{describe(e)}{stderr}{await needs_auth(self.server)}") from None

    async def close(self) -> None:
        owner, self._owner = self._owner, None
        if self._stop is not None:
            self._stop.set()
        if owner is not None:
            if self._ready is not None and not self._ready.done():
                owner.cancel()  # still starting: there is no session to wind down politely
            try:
                await asyncio.wait_for(owner, STOP_WAIT_S)
            except BaseException:  # a crashed session may fail on the way out; closing goes on
                if not owner.done():
                    owner.cancel()
        self.client = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    await new_client(
                        self.server,
                        stack,
                        self._errlog,
                        self.report,
                        message_handler=self._on_message,
                        elicitation_callback=self.calls.on_question,
                        sampling_callback=self.calls.on_sampling,
                        extensions=[Tasks(self.calls.on_task)],
                    )
                )
                await self._list(client)
                tasks = await stack.enter_async_context(anyio.create_task_group())
                self._tasks = tasks
                tasks.start_soon(self._refresher, client)
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS and _announces_changes(client):
                    tasks.start_soon(self._listen, client)
                self.client = client
                ready.set_result(None)
                await stop.wait()
                tasks.cancel_scope.cancel()
        except asyncio.CancelledError:
            ready.cancel()  # if still pending: the opener has already given up and said why
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(describe(e)))
            elif not stop.is_set():
                self.lost = True
        finally:
            self.client = None

    # -- the tool list ------------------------------------------------------------------

    async def refresh(self) -> None:
        if self.client is None:
            raise RuntimeError(f"MCP server {self.server.name} is not connected")
        await self._list(self.client)

    async def _list(self, client: Client) -> None:
        specs: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            specs.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or cursor in seen:
                break
            seen.add(cursor)
        else:
            self.report(
                f"MCP server {self.server.name}: stopped listing tools after {MAX_PAGES} pages; the rest are left out"
            )
        self.listed(self.server, specs)

    async def _on_message(self, message: Any) -> None:
        # The SDK drops a message it cannot parse (such as JSON nested deeper than its parser
        # allows) and hands the error here; the request it answered then waits for its timeout.
        if isinstance(message, Exception):
            self.unreadable = f"it sent a message that cannot be read ({describe(message)})"
            self.report(f"MCP server {self.server.name}: {self.unreadable}; it was dropped")
        # Handshake-era connections deliver change notifications here.
        elif isinstance(getattr(message, "root", message), ToolListChangedNotification):
            self._changed.set()
        elif isinstance(getattr(message, "root", message), ResourceUpdatedNotification) and self.updated is not None:
            self.updated(self.server, str(getattr(message, "root", message).params.uri))

    async def _listen(self, client: Client) -> None:
        # 2026-era connections deliver them on a subscription stream instead.
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._changed.set()
        except SubscriptionLost:
            self.lost = True  # the server went away between calls: restart before the next one
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                self.lost = True  # it went away before the subscription was acknowledged
            else:
                self.report(f"MCP server {self.server.name}: cannot follow tool-list changes: {describe(e)}")
        except Exception as e:
            self.report(f"MCP server {self.server.name}: cannot follow tool-list changes: {describe(e)}")

    async def _refresher(self, client: Client) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                await self._list(client)
            except Exception as e:
                self.report(f"MCP server {self.server.name}: listing tools again after a change failed: {describe(e)}")

    # -- resources and prompts -----------------------------------------------------------

    async def use(self, fn: Callable[[Client], Any], timeout_s: float) -> Any:
        """`await fn(client)` within `timeout_s`; raises RuntimeError saying what went wrong, in the server's name."""
        if self.client is None:
            raise RuntimeError(self.gone or f"MCP server {self.server.name} is not connected")
        try:
            with anyio.fail_after(timeout_s):
                return await fn(self.client)
        except TimeoutError:
            raise RuntimeError(f"MCP server {self.server.name} gave no answer within {timeout_s:g} s") from None
        except MCPError as e:
            raise RuntimeError(f"MCP server {self.server.name} refused (error {e.code}): {said(e.message)}") from None
        except Exception as e:
            raise RuntimeError(f"MCP server {self.server.name}: {describe(e)}") from None

    async def follow(self, uri: str) -> bool:
        """Subscribe to a resource's updates; False when the server does not offer subscriptions."""
        client = self.client
        resources = client.server_capabilities.resources if client is not None else None
        if client is None or resources is None or not resources.subscribe:
            return False
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._tasks.start_soon(self._listen_resource, client, uri)
        else:
            with warnings.catch_warnings():  # deprecated only from 2026-07-28, which takes the branch above
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self.use(lambda c: c.session.subscribe_resource(uri), self.server.connect_timeout_s)
        return True

    async def _listen_resource(self, client: Client, uri: str) -> None:
        try:
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                async for event in subscription:
                    if isinstance(event, ResourceUpdated) and self.updated is not None:
                        self.updated(self.server, event.uri)
        except Exception as e:
            self.report(f"MCP server {self.server.name}: stopped following {uri}: {describe(e)}")

    # -- calls --------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout_s: float,
        inputs: CallInputs | None = None,
        host: CallHost | None = None,
        on_caller: OnCaller | None = None,
    ) -> ToolResult:
        """Never raises: every failure is a result the model can read. `inputs`: recorded answers to the
        questions the server may ask during the call; the ones nobody answered come back in the result.
        `host`: the run's side of the call (tools.base.CallHost); `on_caller` runs its jobs on its thread."""
        self.calls.current = Current(name, inputs, host, on_caller, timeout_s, time.monotonic() + timeout_s)
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                result = await self._call(name, arguments, timeout_s, host.attached() if host is not None else None)
        finally:
            self.calls.current, self._scope = None, None
        if scope.cancelled_caught:
            return ToolResult(f"{name} on MCP server {self.server.name} was abandoned: the run is stopping.", ok=False)
        if inputs is not None and inputs.unanswered:
            return ToolResult(result.text, ok=False, awaiting_input=tuple(q.as_dict() for q in inputs.unanswered))
        return result

    def abandon(self) -> None:
        """Stop the call running now (on the loop's thread): a task it waits on is cancelled on its server."""
        if self._scope is not None:
            self._scope.cancel()

    async def _call(
        self, name: str, arguments: dict[str, Any], timeout_s: float, attached: dict[str, Any] | None
    ) -> ToolResult:
        note = ""
        if self.lost and self.gone is None:
            note = await self._restart("its connection closed since the last call")
        if self.gone is not None or self.client is None:
            return ToolResult(self.gone or note or f"MCP server {self.server.name} is not connected.", ok=False)
        note = f"{note}\n" if note else ""
        start = time.monotonic()
        try:
            if attached is not None:  # the call left a task running when its process stopped: follow it
                result = await self.calls.reattach(self.client.session, attached)
            else:
                result = await self.client.call_tool(
                    name, arguments, read_timeout_seconds=timeout_s, progress_callback=self.calls.on_progress
                )
        except TaskEnded as e:
            return (
                ToolResult(f"{note}{e.result.text}", ok=e.result.ok, timed_out=e.result.timed_out) if note else e.result
            )
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                late = timed_out(name, self.server.name, timeout_s)
                return ToolResult(f"{note}{late.text}", ok=False, timed_out=True)
            if e.code == CONNECTION_CLOSED:
                report = await self._restart(f"the connection closed {time.monotonic() - start:.1f} s into this call")
                return ToolResult(
                    f"{note}{report}\nThe call was not repeated: it may or may not have taken effect.", ok=False
                )
            refused = self.calls.current.refused if self.calls.current is not None else None
            if refused is not None:  # the SDK raises what the harness refused the server during the call
                return ToolResult(
                    f"{note}{name} on MCP server {self.server.name} stopped: it asked the run's model for a reply "
                    f"(sampling). {refused}",
                    ok=False,
                )
            if e.code == TOO_LONG:
                return ToolResult(f"{note}{name} on MCP server {self.server.name}: {said(e.message)}", ok=False)
            return ToolResult(
                f"{note}MCP server {self.server.name} refused the call (error {e.code}): {said(e.message)}", ok=False
            )
        except Exception as e:  # a malformed answer, a transport fault: still one observation
            return ToolResult(
                f"{note}The call to {name} on MCP server {self.server.name} failed: {describe(e)}", ok=False
            )
        shown = render(result, self.server)
        return ToolResult(f"{note}{shown.text}", ok=shown.ok) if note else shown

    async def _restart(self, why: str) -> str:
        """Restart a crashed server once per allowed reconnect; say what happened, in one paragraph."""
        async with self._restarting:
            if self.gone is not None:
                return self.gone
            stderr = self._stderr()
            await self.close()
            self.lost = False
            local = self.server.command is not None  # a stdio server is ours to restart; an HTTP one, to reach again
            crashed = f"MCP server {self.server.name} {'crashed' if local else 'went away'} ({why}){stderr}."
            again = "restarted" if local else "reconnected"
            if self.restarts_left <= 0:
                self.gone = f"{crashed} It is not {again} again in this run, so its tools cannot be used."
            else:
                self.restarts_left -= 1
                try:
                    await self.open()
                except Exception as e:
                    self.gone = (
                        f"{crashed} It could not be {again}: {said(str(e))}. Its tools cannot be used in this run."
                    )
            told = self.gone or f"{crashed} It was {again} and its tools were listed again."
            self.report(told)
            return told

    def _stderr(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            tail = self._errlog.read()[-STDERR_TAIL_CHARS:]
        except (OSError, ValueError):
            return ""
        tail = defuse(clean(tail)).strip()
        return f"; its last words on stderr: {tail!r}" if tail else ""


def timed_out(name: str, server: str, seconds: float) -> ToolResult:
    """A call given up on. The server was asked to cancel it, but nothing makes it stop."""
    return ToolResult(
        f"{name} on MCP server {server} gave no answer within {seconds:g} s. The server was asked to "
        "cancel it, but the call may still be running there and may yet take effect: check its effect "
        "before calling it again.",
        ok=False,
        timed_out=True,
    )


def _announces_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return tools is not None and bool(tools.list_changed)
