"""MCP tool discovery: the tools of configured MCP servers become harness tools for a run.

Importing this package is cheap; the SDK loads only when a server is configured.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tools.base import Registry
from tools.mcp.config import McpServer


@contextmanager
def with_mcp(servers: Sequence[McpServer], base: Registry) -> Iterator[Registry]:
    """`base` plus every tool of `servers`, connected for the duration of the block."""
    if not servers:
        yield base
        return
    from tools.mcp.manager import McpTools
    from tools.mcp.registry import LiveRegistry

    with McpTools(servers) as mcp:
        yield LiveRegistry.over(base, mcp)


__all__ = ["McpServer", "with_mcp"]
