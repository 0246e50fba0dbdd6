"""How the harness reaches one MCP server: a stdio process it starts on the host (not in the run's sandbox),
or a Streamable HTTP URL, with OAuth when the server's settings ask for it; how long opening may take; and,
when an HTTP server without auth settings failed to open, whether it wants authorisation."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from core.mcp_settings import McpServer
from tools.mcp.auth import WAIT_FOR_PERSON_S, oauth_for
from tools.mcp.config import expand_headers, host_env
from tools.mcp.lines import use_line_stream

CLIENT_INFO = Implementation(name="harness", version="0")


def open_within(server: McpServer) -> float:
    """Seconds a server may take to start, shake hands and list its tools; more where a person must authorise."""
    person = (
        server.oauth is not None and server.oauth.grant == "authorization_code" and server.oauth.authorize == "browser"
    )
    return server.connect_timeout_s + (WAIT_FOR_PERSON_S if person else 0.0)


async def new_client(
    s: McpServer, stack: AsyncExitStack, errlog: Any, report: Callable[[str], None], **handlers: Any
) -> Client:
    """The SDK's client for `s`, not yet entered; `errlog` takes a stdio server's stderr, `report` hears of
    OAuth's progress, `handlers` are the client's callbacks (messages, questions, sampling)."""
    if s.command is not None:
        params = StdioServerParameters(command=s.command, args=s.args, cwd=s.cwd, env=host_env(s))
        use_line_stream()  # a huge answer must not stall every server's calls for a minute
        transport = stdio_client(params, errlog=errlog)
    else:
        assert s.url is not None  # McpServer holds exactly one of command and url
        timeout = httpx2.Timeout(s.connect_timeout_s, read=None)  # per-call timeouts come from the session
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=expand_headers(s), timeout=timeout, auth=oauth_for(s, report))
        )
        transport = streamable_http_client(s.url, http_client=http)
    return Client(
        transport,
        read_timeout_seconds=s.connect_timeout_s,
        mode=s.protocol,
        client_info=CLIENT_INFO,
        **handlers,
    )


async def needs_auth(server: McpServer) -> str:
    """Where an HTTP server without auth settings failed to start: whether it wants authorisation."""
    if server.url is None or server.oauth is not None:
        return ""
    try:
        async with httpx2.AsyncClient(headers=expand_headers(server), timeout=5.0) as http:
            answer = await http.post(server.url, json={}, headers={"Accept": "application/json, text/event-stream"})
    except (httpx2.HTTPError, ValueError):
        return ""
    if answer.status_code != 401:
        return ""
    return (
        "; it answered 401 Unauthorized: it needs authorisation, so give it `oauth` settings (or a token in `headers`)"
    )
