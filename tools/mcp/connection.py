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
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost, ToolsListChanged
from mcp.types import Implementation, ToolListChangedNotification
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from core.mcp_settings import McpServer
from tools.base import ToolResult
from tools.mcp.config import expand_headers, host_env
from tools.mcp.lines import TOO_LONG, use_line_stream
from tools.mcp.render import render
from tools.mcp.text import cap, clean, defuse

MAX_PAGES = 1000  # a server whose cursor never ends cannot hang discovery
STOP_WAIT_S = 10.0  # the SDK's own stdio shutdown is bounded at about 5 s
STDERR_TAIL_CHARS = 600
CLIENT_INFO = Implementation(name="harness", version="0")

Listed = Callable[[McpServer, list[Any]], None]  # (server, every mcp.types.Tool it lists now)
Report = Callable[[str], None]  # a problem worth telling the user that does not stop the server


class Connection:
    def __init__(self, server: McpServer, listed: Listed, report: Report):
        self.server = server
        self.listed = listed
        self.report = report
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

    # -- opening and closing ------------------------------------------------------------

    async def open(self) -> None:
        """Start the server, shake hands and list its tools; raises with a readable reason."""
        self._ready = ready = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") if self.server.command else None
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp:{self.server.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.server.connect_timeout_s)
        except TimeoutError:
            await self.close()
            unreadable = f"; {self.unreadable}" if self.unreadable else ""
            raise RuntimeError(
                f"no answer within {self.server.connect_timeout_s:g} s{unreadable}{self._stderr()}"
            ) from None
        except Exception as e:
            stderr = self._stderr()
            await self.close()
            raise RuntimeError(f"{describe(e)}{stderr}") from None

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
                client = await stack.enter_async_context(await self._client(stack))
                await self._list(client)
                tasks = await stack.enter_async_context(anyio.create_task_group())
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

    async def _client(self, stack: AsyncExitStack) -> Client:
        s = self.server
        if s.command is not None:
            params = StdioServerParameters(command=s.command, args=s.args, cwd=s.cwd, env=host_env(s))
            use_line_stream()  # a huge answer must not stall every server's calls for a minute
            transport = stdio_client(params, errlog=self._errlog)
        else:
            assert s.url is not None  # McpServer holds exactly one of command and url
            timeout = httpx2.Timeout(s.connect_timeout_s, read=None)  # per-call timeouts come from the session
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=expand_headers(s), timeout=timeout))
            transport = streamable_http_client(s.url, http_client=http)
        return Client(
            transport,
            read_timeout_seconds=s.connect_timeout_s,
            mode=s.protocol,
            message_handler=self._on_message,
            client_info=CLIENT_INFO,
        )

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

    # -- calls --------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> ToolResult:
        """Never raises: every failure is a result the model can read."""
        note = ""
        if self.lost and self.gone is None:
            note = await self._restart("its connection closed since the last call")
        if self.gone is not None or self.client is None:
            return ToolResult(self.gone or note or f"MCP server {self.server.name} is not connected.", ok=False)
        note = f"{note}\n" if note else ""
        start = time.monotonic()
        try:
            result = await self.client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                late = timed_out(name, self.server.name, timeout_s)
                return ToolResult(f"{note}{late.text}", ok=False, timed_out=True)
            if e.code == CONNECTION_CLOSED:
                report = await self._restart(f"the connection closed {time.monotonic() - start:.1f} s into this call")
                return ToolResult(
                    f"{note}{report}\nThe call was not repeated: it may or may not have taken effect.", ok=False
                )
            if e.code == TOO_LONG:
                return ToolResult(f"{note}{name} on MCP server {self.server.name}: {_said(e.message)}", ok=False)
            return ToolResult(
                f"{note}MCP server {self.server.name} refused the call (error {e.code}): {_said(e.message)}", ok=False
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
                        f"{crashed} It could not be {again}: {_said(str(e))}. Its tools cannot be used in this run."
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


def _said(text: str) -> str:
    """What a server said, cleaned, capped and defused: it is untrusted text inside our own message."""
    return cap(defuse(clean(text, keep_newlines=False)), 500)


def describe(e: BaseException) -> str:
    """The innermost real error of an exception group, as `Type: message`."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {_said(str(e))}" if str(e) else type(e).__name__
