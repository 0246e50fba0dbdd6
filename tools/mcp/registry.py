"""A tool registry whose MCP part follows the servers: new lists replace a server's tools between steps.

Tool lists arrive on the manager's thread; this registry applies them on the
run's thread whenever the loop or the dispatcher looks a tool up, so the dict
is never changed while another thread walks it. Each change rebuilds the MCP
part from every server's newest list, servers in the order they are
configured, so which tools a run offers does not depend on which server
answered first. A name already taken (by a built-in tool, or by another tool
that maps to the same name) is reported and the newcomer left out; so is every
tool past the run's `max_tools`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.mcp_settings import MAX_TOOLS
from tools.base import Registry, Tool
from tools.mcp.manager import McpTools, left_out


@dataclass
class LiveRegistry(Registry):
    mcp: McpTools | None = None
    max_tools: int = MAX_TOOLS  # MCP tools over all servers
    base: dict[str, Tool] = field(default_factory=dict)  # the tools that are not MCP tools
    listed: dict[str, list[Tool]] = field(default_factory=dict)  # server -> its newest list, adapted
    owned: dict[str, list[str]] = field(default_factory=dict)  # server -> names of its tools here

    @classmethod
    def over(cls, base: Registry, mcp: McpTools, max_tools: int = MAX_TOOLS) -> LiveRegistry:
        reg = cls(tools=dict(base.tools), mcp=mcp, max_tools=max_tools, base=dict(base.tools))
        reg.sync()
        return reg

    def sync(self) -> None:
        if self.mcp is None:
            return
        changes = self.mcp.take_changes()
        if not changes:
            return
        self.listed.update(changes)
        self.tools.clear()
        self.tools.update(self.base)
        self.owned = {}
        offered, over = 0, []
        for server in self.mcp.servers:
            kept: list[str] = []
            for tool in self.listed.get(server.name, []):
                if tool.name in self.tools:
                    owner = "another of its tools" if tool.name in kept else self._owner(tool.name)
                    self.mcp.report(
                        f"MCP server {server.name}: a tool would be named {tool.name!r}, which "
                        f"{owner} already uses; it is left out"
                    )
                elif offered >= self.max_tools:
                    over.append(tool.name)
                else:
                    self.tools[tool.name] = tool
                    kept.append(tool.name)
                    offered += 1
            self.owned[server.name] = kept
        if over:
            self.mcp.report(
                left_out(
                    f"The MCP servers offer {self.max_tools + len(over):,} tools, more than the "
                    f"policy's mcp_max_tools of {self.max_tools}",
                    over,
                )
            )

    def add(self, tool: Tool) -> None:
        """A tool added after the MCP ones stays through later rebuilds, as a built-in one does."""
        self.sync()
        super().add(tool)
        self.base[tool.name] = tool

    def server_of(self, name: str) -> str | None:
        return next((server for server, names in self.owned.items() if name in names), None)

    def _owner(self, name: str) -> str:
        owner = self.server_of(name)
        return "a built-in tool" if owner is None else f"a tool of MCP server {owner}"

    def get(self, name: str) -> Tool | None:
        self.sync()
        return super().get(name)

    def names(self) -> list[str]:
        self.sync()
        return super().names()

    def __iter__(self) -> Any:
        self.sync()
        return super().__iter__()

    def __len__(self) -> int:
        self.sync()
        return super().__len__()
