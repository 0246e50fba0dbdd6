"""Real MCP server processes for the tests: scripts under servers/, started over stdio or HTTP."""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from agent.dispatch import Dispatcher, dispatch
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from core.types import Observation, ToolCall
from tests.agent.helpers import new_journal
from tools.base import Registry, ToolContext
from tools.builtin import standard_tools
from tools.mcp import with_mcp

SERVERS = Path(__file__).parent / "servers"
RUNS = itertools.count()


def stdio(name: str, script: str, *args: str, **settings) -> McpServer:
    return McpServer(name=name, command=sys.executable, args=[str(SERVERS / script), *args], **settings)


def context(timeout_s: float = 20.0) -> ToolContext:
    return ToolContext(sandbox=None, timeout_s=timeout_s)  # MCP tools never touch the sandbox


def observe(registry: Registry, tmp_path, tool: str, within_s: float = 20.0, **arguments) -> Observation:
    """One call through the dispatcher, approved where the tool asks (as a user would)."""
    journal = new_journal(tmp_path, run_id=f"run{next(RUNS)}")
    call = ToolCall(id="c1", name=tool, arguments=json.dumps(arguments))
    try:
        approved = Dispatcher(
            tools=registry, ctx=context(within_s), policy=HarnessPolicy(), journal=journal, approve=lambda c, t: True
        )
        done = dispatch(approved, [call], 1)
        [obs] = done.observations
    finally:
        journal.close()
    return obs


# What could pass for a chat-template or tool-format marker, or for our fence, once NFKC has folded look-alikes.
MARKER = re.compile(
    r"<\|[^|<>\n]*\|>"
    r"|<\s*/?\s*(?:tool_call|tool_response|tools|think|start_of_turn|end_of_turn|s)\s*>"
    r"|\[\s*/?\s*(?:INST|TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|SYSTEM_PROMPT)\s*\]"
    r"|^[ \t]*(?:Human|Assistant)[ \t]*:"
    r"|mcp\W*untrusted",
    re.IGNORECASE | re.MULTILINE,
)


def markers(text: str) -> list[str]:
    return MARKER.findall(unicodedata.normalize("NFKC", text))


def said(text: str, server: str = "hostile") -> str:
    """The words of an untrusted server in an observation: the inside of the one fence that names it, which
    closes once, at the very end, and holds no marker."""
    assert f'The result from MCP server "{server}" (untrusted).' in text.partition("<mcp-untrusted")[0], text[:300]
    return fenced(text, server)


def fenced(text: str, server: str) -> str:
    """The inside of the one fence naming `server` in `text`, which closes once, at the very end, and holds no marker."""
    before, opening, inside = text.partition(f'<mcp-untrusted server="{server}">\n')
    assert opening and "(untrusted)" in before, text[:300]
    assert inside.endswith("\n</mcp-untrusted>") and inside.count("</mcp-untrusted>") == 1, text[-300:]
    inside = inside.removesuffix("\n</mcp-untrusted>")
    assert not markers(inside), markers(inside)
    return inside


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")  # a zombie has ended


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP MCP server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the HTTP MCP server did not listen on port {port} within {within_s} s")


@pytest.fixture(scope="session")
def http_url():
    """basic.py serving Streamable HTTP on a free 127.0.0.1 port, as a subprocess."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "basic.py"), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def trusted_basic():
    """basic.py over stdio, trusted, shared by the tests that do not restart or reconfigure it."""
    with with_mcp([stdio("basic", "basic.py", trusted=True)], standard_tools()) as registry:
        yield registry


@pytest.fixture(scope="module")
def hostile():
    """servers/hostile.py over stdio, untrusted, its approvals turned off so the tests can call its tools."""
    with with_mcp([stdio("hostile", "hostile.py", approve="never")], standard_tools()) as registry:
        yield registry
