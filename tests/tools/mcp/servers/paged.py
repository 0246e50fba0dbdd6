"""An MCP server with many tools served a page at a time: `python paged.py COUNT PAGE_SIZE`.

MCPServer lists every tool in one page, so this one uses the low-level Server
to hand out cursors.
"""

import sys

import anyio
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import INVALID_PARAMS, CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations

COUNT, PAGE = int(sys.argv[1]), int(sys.argv[2])
TOOLS = [
    Tool(
        name=f"tool_{i:03d}",
        description=f"Tool number {i}.",
        input_schema={"type": "object", "properties": {"x": {"type": "integer", "description": "any number"}}},
        annotations=ToolAnnotations(read_only_hint=True),
    )
    for i in range(COUNT)
]


async def list_tools(ctx, params) -> ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < COUNT else None)


async def call_tool(ctx, params) -> CallToolResult:
    if (params.arguments or {}).get("x") == -1:
        raise MCPError(INVALID_PARAMS, "x must not be negative")  # a protocol error, not an is_error result
    return CallToolResult(content=[TextContent(type="text", text=f"{params.name} got {params.arguments}")])


server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
