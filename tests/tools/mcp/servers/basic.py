"""A small MCP server for tests: `python basic.py [http PORT] [--once MARKER] [--name NAME] [--pidfile FILE]`.

Tools cover each path of the client: a read-only echo, a plain write, an error,
a hang, a crash, a tool added at run time, rich content, structured output and
an environment probe. `--pidfile FILE` tells tests which process to watch. With `--once MARKER` the server refuses to start a second
time, which makes a restart after a crash fail.
"""

import argparse
import os
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents, ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("transport", nargs="?", default="stdio")
parser.add_argument("port", nargs="?", type=int, default=0)
parser.add_argument("--once")
parser.add_argument("--name", default="basic")
parser.add_argument("--pidfile")
opts = parser.parse_args()
if opts.pidfile:
    Path(opts.pidfile).write_text(str(os.getpid()))

if opts.once:
    marker = Path(opts.once)
    if marker.exists():
        print("refusing to start a second time", file=sys.stderr, flush=True)
        sys.exit(5)
    marker.write_text("started")

server = MCPServer(opts.name, log_level="WARNING")


@server.tool(title="Echo", annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def write_note(text: str) -> str:
    """Pretend to store a note."""
    return f"stored note: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail() -> str:
    """Always fails."""
    raise ToolError("the disk is full")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def hang(seconds: float = 3600) -> str:
    """Sleeps far longer than anyone waits."""
    await anyio.sleep(seconds)
    return "woke up"


@server.tool()
def crash() -> str:
    """Dies mid-call."""
    print("segfault in the flux capacitor", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `late` and announces the change."""

    def late() -> str:
        """Appeared at run time."""
        return "late tool here"

    server.add_tool(late, name="late")
    await ctx.notify_tools_changed()  # 2026-era connections: the subscription stream
    await ctx.session.send_tool_list_changed()  # handshake-era connections: a notification
    return "added a tool"


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def picture() -> list:
    """Returns text, an image, a resource link and an embedded resource."""
    return [
        TextContent(type="text", text="here is the chart"),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
        ResourceLink(type="resource_link", uri="file:///data/report.csv", name="report", mime_type="text/csv"),
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="mem://notes", mime_type="text/plain", text="note body")
        ),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def weather(city: str) -> dict:
    """Structured output."""
    return {"city": city, "celsius": 21}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env_probe(name: str) -> str:
    """Whether a variable is set in the server's environment."""
    return os.environ.get(name, "(unset)")


if __name__ == "__main__":
    if opts.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=opts.port, streamable_http_path="/mcp")
    else:
        server.run()
