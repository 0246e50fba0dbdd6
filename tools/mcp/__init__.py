"""MCP tool discovery: the tools of configured MCP servers become harness tools for a run.

Servers are part of the policy (`mcp`, a list), so the run record names every
server a run could reach. In a policy file (TOML; YAML takes the same fields):

    [[mcp]]
    name = "files"                      # tools become files__<tool>
    command = "python"                  # stdio: command, args, cwd
    args = ["servers/files.py"]
    env = { LOG_LEVEL = "info" }        # set in the child as written
    env_pass = ["GITHUB_TOKEN"]         # copied from the host; nothing else is inherited
    trusted = true                      # readOnlyHint makes a tool `read`; results shown as written

    [[mcp]]
    name = "search"
    url = "http://127.0.0.1:8000/mcp"   # Streamable HTTP
    headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }  # read from the host when connecting
    approve = "never"                   # untrusted write tools ask for approval unless told so
    timeout_s = 20                      # per call; default the policy's dispatch.tool_timeout_s
    max_tools = 30                      # its first 30 tools; the policy's mcp_max_tools caps all servers

Every string of a tool's definition is cleaned of control and invisible characters,
capped and defused (tools/mcp/text.py); a tool whose input schema is still too
large, or too deeply nested, is left out. An untrusted server's schema keeps only the
arguments' structure: its words (descriptions, titles, examples, `x-` fields) are shown
inside the fence with the tool's description, one line per argument. Past the policy's
`mcp_disclose_over_tokens` (8,000 tokens of schemas in every request) the MCP tools go as
one-line summaries with `describe_tool` for the rest, as under `disclose_tools`. The results of an untrusted server are
cleaned, capped, defused and fenced as its descriptions are; a trusted server's
results are only cleaned of control characters, as the user vouched for it. Tools left out, and why, are reported:
`harness tools list` prints them, and a run logs them on the `harness.mcp` logger.

Beside tools (agent/mcp_context.py, tools/mcp/resources.py): resources the host
places before the task (policy `mcp_resources`, task `resources`, `--mcp-resource
SERVER:URI`), followed when they change; a task built from a server's prompt
(`--mcp-prompt SERVER:NAME --arg K=V`). A server's questions during a call
(elicitation) go through the approval gate (policy `approval.elicitation`,
tools/mcp/elicitation.py); its sampling requests are refused unless the server
sets `sampling = true`, then answered by the run's model and billed to the run
(tools/mcp/sampling.py, agent/sampling.py). A long call the server runs as a task
is followed by its journaled handle, even across a resume (tools/mcp/tasks.py).
The policy's `mcp_read_resource` offers the model a `read_resource` tool
(tools/mcp/resource_tool.py). A remote server may need OAuth 2.1 (`oauth`, tools/mcp/auth.py).

On the command line (`harness run` and `harness tools list`):
`--mcp "[NAME=]COMMAND ARGS"`, `--mcp-url [NAME=]URL` (both untrusted) and
`--config FILE` (a file with an `mcp` list, such as a policy file).

Importing this package is cheap; the SDK loads only when a server is configured.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

from core.mcp_settings import MAX_TOOLS, McpServer
from tools.base import Registry


@contextmanager
def with_mcp(
    servers: Sequence[McpServer],
    base: Registry,
    max_tools: int = MAX_TOOLS,
    elicitation: Literal["ask", "defaults", "decline"] = "ask",
    read_resource: bool = False,
) -> Iterator[Registry]:
    """`base` plus the tools of `servers` (at most `max_tools` of them), connected for the duration of the block.
    `elicitation`: how a server's questions are answered when no recorded answer covers them; `read_resource`:
    offer the model the read_resource tool as well (tools/mcp/resource_tool.py)."""
    if not servers:
        yield base
        return
    from tools.mcp.manager import McpTools
    from tools.mcp.registry import LiveRegistry

    with McpTools(servers, elicitation) as mcp:
        registry = LiveRegistry.over(base, mcp, max_tools)
        if read_resource:
            from tools.mcp.resource_tool import read_resource_tool

            registry.add(read_resource_tool(mcp))
        yield registry


__all__ = ["McpServer", "with_mcp"]
