"""The MCP connections of one run, on one background event-loop thread, behind synchronous calls.

`Tool.run` is synchronous and the SDK is async, so a manager owns an asyncio
loop on a daemon thread; each call is submitted to it and waited for with a
deadline. Tool lists arrive on that thread (at start, after a change
notification, after a restart) and wait in `take_changes()` until the run's
registry picks them up on the run's own thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any

from core.errors import HarnessError
from core.mcp_settings import McpServer
from tools.base import Tool, ToolResult
from tools.mcp.adapter import adapt
from tools.mcp.connection import STOP_WAIT_S, Connection, timed_out
from tools.mcp.text import one_line

log = logging.getLogger("harness.mcp")


def left_out(why: str, names: list[str], shown: int = 10) -> str:
    """A notice of tools left out: why, and which (the first few by name)."""
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return f"{why}; left out: {', '.join(names[:shown])}{more}"


class McpStartError(HarnessError):
    """A configured MCP server did not start; the message names it and says why."""


class McpTools:
    def __init__(self, servers: Sequence[McpServer]):
        self.servers = list(servers)
        self.problems: list[str] = []  # reported once each, in order
        self._lock = threading.Lock()
        self._listed: dict[str, list[Tool]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._connections = {s.name: Connection(s, self._on_listed, self.report) for s in self.servers}
        self._closed = False

    def start(self) -> McpTools:
        """Start every server at once; if any fails, close them all and say which and why."""
        self._thread.start()
        # Each server gives up after its connect_timeout_s and then stops within STOP_WAIT_S.
        deadline = max((s.connect_timeout_s for s in self.servers), default=0) + 2 * STOP_WAIT_S
        try:
            outcomes = self._wait(self._open_all(), deadline)
        except TimeoutError:
            self.close()
            raise McpStartError(f"The MCP servers did not start within {deadline:g} s.") from None
        failed = [
            f"MCP server {s.name} ({s.where}) did not start: {outcome}"
            for s, outcome in zip(self.servers, outcomes, strict=True)
            if isinstance(outcome, BaseException)
        ]
        if failed:
            self.close()
            raise McpStartError("\n".join(failed) + "\nCheck the command or URL, or leave the server out.")
        return self

    async def _open_all(self) -> list[Any]:
        return await asyncio.gather(*(c.open() for c in self._connections.values()), return_exceptions=True)

    def call(self, server: str, name: str, arguments: dict[str, Any], timeout_s: float) -> ToolResult:
        """Synchronous, and never raises: a dead loop or a missed deadline is a result too."""
        if self._closed:
            return ToolResult(
                f"The MCP connections of this run are closed; {server}__{name} cannot be called.", ok=False
            )
        connection = self._connections[server]
        # Beyond the call's own timeout, leave room for one restart of a crashed server.
        deadline = timeout_s + connection.server.connect_timeout_s + STOP_WAIT_S
        future = asyncio.run_coroutine_threadsafe(connection.call(name, arguments, timeout_s), self._loop)
        try:
            return future.result(deadline)
        except TimeoutError:
            future.cancel()
            return timed_out(name, server, deadline)

    def refresh(self, server: str) -> None:
        """List a server's tools again now, as after a change notification."""
        connection = self._connections[server]
        self._wait(connection.refresh(), connection.server.connect_timeout_s)

    def take_changes(self) -> dict[str, list[Tool]]:
        """Each server's newest tool list since the last take, adapted to harness tools."""
        with self._lock:
            changes, self._listed = self._listed, {}
        return changes

    def report(self, problem: str) -> None:
        with self._lock:
            if problem in self.problems:
                return
            self.problems.append(problem)
        log.warning("%s", problem)

    def close(self) -> None:
        """Stop every server and the loop; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            try:
                self._wait(self._close_all(), STOP_WAIT_S * 2)
            except TimeoutError:
                log.warning("MCP servers did not stop within %s s", STOP_WAIT_S * 2)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(STOP_WAIT_S)
        if not self._thread.is_alive():
            self._loop.close()

    async def _close_all(self) -> None:
        await asyncio.gather(*(c.close() for c in self._connections.values()), return_exceptions=True)

    def _on_listed(self, server: McpServer, specs: list[Any]) -> None:
        if server.max_tools is not None and len(specs) > server.max_tools:
            self.report(
                left_out(
                    f"MCP server {server.name} lists {len(specs):,} tools, more than its max_tools of "
                    f"{server.max_tools}",
                    [one_line(spec.name, 80) for spec in specs[server.max_tools :]],
                )
            )
            specs = specs[: server.max_tools]  # before adapting: 2,000 tools cost time to clean as well
        tools = []
        for spec in specs:
            try:
                tools.append(adapt(server, spec, self._caller(server.name)))
            except ValueError as e:
                self.report(str(e))
        with self._lock:
            self._listed[server.name] = tools

    def _caller(self, server: str):
        return lambda name, arguments, timeout_s: self.call(server, name, arguments, timeout_s)

    def _wait(self, coro: Coroutine[Any, Any, Any], timeout_s: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def __enter__(self) -> McpTools:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
