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
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from functools import partial
from typing import Any

from core.errors import HarnessError
from core.interrupts import Abandoned, abandoning, requested
from core.mcp_settings import McpServer
from tools.base import CallHost, Tool, ToolResult
from tools.mcp.adapter import adapt
from tools.mcp.connection import STOP_WAIT_S, Connection, timed_out
from tools.mcp.elicitation import CallInputs, Rule
from tools.mcp.tasks import CANCEL_WAIT_S
from tools.mcp.text import one_line
from tools.mcp.transport import open_within

log = logging.getLogger("harness.mcp")
LOOK_S = 0.25  # how often a waiting caller looks whether the run is being stopped


def left_out(why: str, names: list[str], shown: int = 10) -> str:
    """A notice of tools left out: why, and which (the first few by name)."""
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return f"{why}; left out: {', '.join(names[:shown])}{more}"


class McpStartError(HarnessError):
    """A configured MCP server did not start; the message names it and says why."""


class McpTools:
    """`elicitation`: how a server's question that no recorded answer covers is answered (see
    tools.mcp.elicitation)."""

    def __init__(self, servers: Sequence[McpServer], elicitation: Rule = "ask"):
        self.servers = list(servers)
        self.problems: list[str] = []  # reported once each, in order
        self._lock = threading.Lock()
        self._listed: dict[str, list[Tool]] = {}
        self._updated: list[tuple[str, str]] = []  # (server, uri) of subscribed resources changed since the last take
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._connections = {
            s.name: Connection(s, self._on_listed, self.report, self._on_updated, elicitation) for s in self.servers
        }
        self._closed = False

    def start(self) -> McpTools:
        """Start every server at once; if any fails, close them all and say which and why."""
        self._thread.start()
        # Each server gives up after its connect_timeout_s and then stops within STOP_WAIT_S.
        deadline = max((open_within(s) for s in self.servers), default=0) + 2 * STOP_WAIT_S
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

    def call(
        self,
        server: str,
        name: str,
        arguments: dict[str, Any],
        timeout_s: float,
        answers: Sequence[Mapping[str, Any]] = (),
        host: CallHost | None = None,
    ) -> ToolResult:
        """Synchronous, and never raises but Abandoned: a dead loop or a missed deadline is a result too.
        `answers`: the recorded answers to the questions the server asks during the call, in order; `host`: the
        run's side of the call (tools.base.CallHost). While it waits, this thread runs what the call needs done on
        the run's side (journaling a task handle, a sampling request's model call). When the run is being stopped
        (core.interrupts), the call is abandoned, a task it waits on cancelled, and Abandoned raised."""
        if self._closed:
            return ToolResult(
                f"The MCP connections of this run are closed; {server}__{name} cannot be called.", ok=False
            )
        connection = self._connections[server]
        # Beyond the call's own timeout, leave room for one restart of a crashed server.
        deadline = time.monotonic() + timeout_s + connection.server.connect_timeout_s + STOP_WAIT_S
        jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        future = asyncio.run_coroutine_threadsafe(
            connection.call(name, arguments, timeout_s, CallInputs(answers), host, self._caller_jobs(jobs)), self._loop
        )
        future.add_done_callback(lambda _: jobs.put(None))
        stopping = False
        while not future.done():
            if not stopping and abandoning():
                stopping = True
                self._loop.call_soon_threadsafe(connection.abandon)
                deadline = min(deadline, time.monotonic() + CANCEL_WAIT_S + 1)
            try:
                job = jobs.get(timeout=max(min(deadline - time.monotonic(), LOOK_S), 0.0))
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                future.cancel()
                if stopping:
                    break
                return timed_out(name, server, timeout_s)
            if job is not None:
                job()
        if stopping:
            raise Abandoned(requested() or "a signal")
        return future.result()

    def _caller_jobs(self, jobs: queue.SimpleQueue[Callable[[], None] | None]) -> Callable[[Callable[[], Any]], Any]:
        """An awaitable way for the loop's thread to run a function on the caller's thread and get its value."""

        async def on_caller(fn: Callable[[], Any]) -> Any:
            done: asyncio.Future[Any] = self._loop.create_future()

            def job() -> None:
                try:
                    value = fn()
                except Exception as e:
                    self._loop.call_soon_threadsafe(done.set_exception, e)
                else:
                    self._loop.call_soon_threadsafe(done.set_result, value)

            jobs.put(job)
            return await done

        return on_caller

    def refresh(self, server: str) -> None:
        """List a server's tools again now, as after a change notification."""
        connection = self._connections[server]
        self._wait(connection.refresh(), connection.server.connect_timeout_s)

    # -- resources and prompts: read by the host, not called by the model ---------------------

    def server(self, name: str) -> McpServer:
        if name not in self._connections:
            known = ", ".join(self._connections) or "none"
            raise HarnessError(f"No MCP server is named {name!r}; the run's servers: {known}.")
        return self._connections[name].server

    def read(self, server: str, uri: str, follow: bool = False) -> tuple[list[Any], bool]:
        """A resource's contents, and whether its updates are followed (asked for and offered). Raises HarnessError."""
        connection = self._connections[self.server(server).name]
        timeout = connection.server.timeout_s or connection.server.connect_timeout_s
        try:
            result = self._wait(
                connection.use(lambda c: c.read_resource(uri, cache_mode="bypass"), timeout), timeout + 5
            )
            followed = follow and self._wait(connection.follow(uri), timeout + 5)
        except (RuntimeError, TimeoutError) as e:
            raise HarnessError(f"Resource {uri} of MCP server {server} cannot be read: {e}") from None
        return list(result.contents), bool(followed)

    def prompt(self, server: str, name: str, arguments: Mapping[str, str]) -> Any:
        """A server's prompt filled with `arguments` (an `mcp.types.GetPromptResult`). Raises HarnessError."""
        connection = self._connections[self.server(server).name]
        timeout = connection.server.timeout_s or connection.server.connect_timeout_s
        try:
            return self._wait(connection.use(lambda c: c.get_prompt(name, dict(arguments)), timeout), timeout + 5)
        except (RuntimeError, TimeoutError) as e:
            raise HarnessError(f"Prompt {name!r} of MCP server {server} cannot be had: {e}") from None

    def catalog(self, server: str) -> dict[str, list[Any]]:
        """What a server offers beside its tools: its resources, resource templates and prompts (each
        empty when it offers none, or when listing failed: then a problem is reported)."""
        connection = self._connections[server]
        offered = connection.client.server_capabilities if connection.client is not None else None
        found: dict[str, list[Any]] = {"resources": [], "templates": [], "prompts": []}
        lists: dict[str, tuple[str, str]] = {
            "resources": ("resources", "list_resources"),
            "templates": ("resources", "list_resource_templates"),
            "prompts": ("prompts", "list_prompts"),
        }
        for key, (capability, method) in lists.items():
            if offered is None or getattr(offered, capability, None) is None:
                continue
            try:
                found[key] = self._wait(connection.use(partial(_every, method=method), 60), 65)
            except (RuntimeError, TimeoutError) as e:
                if "(error -32601)" not in str(e):  # a server with resources but no templates says "method not found"
                    self.report(f"MCP server {server}: listing its {key} failed: {e}")
        return found

    def take_updates(self) -> list[tuple[str, str]]:
        """The (server, uri) of subscribed resources that changed since the last take, each once, in order."""
        with self._lock:
            updates, self._updated = self._updated, []
        return list(dict.fromkeys(updates))

    def _on_updated(self, server: McpServer, uri: str) -> None:
        self.updated(server.name, uri)

    def updated(self, server: str, uri: str) -> None:
        """Take a followed resource as changed, as its server's notice would (taken at the next take_updates)."""
        with self._lock:
            self._updated.append((server, uri))

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
        return lambda name, arguments, timeout_s, answers=(), host=None: self.call(
            server, name, arguments, timeout_s, answers, host
        )

    def _wait(self, coro: Coroutine[Any, Any, Any], timeout_s: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def __enter__(self) -> McpTools:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _every(client: Any, method: str, pages: int = 100) -> list[Any]:
    """Every item of a paginated listing (resources, templates or prompts), at most `pages` pages."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(pages):
        result = await getattr(client, method)(cursor=cursor)
        items += getattr(result, "resources", None) or getattr(result, "resource_templates", None) or []
        items += getattr(result, "prompts", None) or []
        cursor = result.next_cursor
        if not cursor:
            break
    return items
