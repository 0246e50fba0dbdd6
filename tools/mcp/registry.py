"""A tool registry whose MCP part follows the servers: new lists replace a server's tools between steps.

Tool lists arrive on the manager's thread; this registry applies them on the
run's thread whenever the loop or the dispatcher looks a tool up, so the dict
is never changed while another thread walks it. A name already taken (by a
built-in tool, or by another tool that maps to the same name) is reported and
the newcomer left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.base import Registry, Tool
from tools.mcp.manager import McpTools


@dataclass
class LiveRegistry(Registry):
    mcp: McpTools | None = None
    owned: dict[str, list[str]] = field(default_factory=dict)  # server -> names of its tools here

    @classmethod
    def over(cls, base: Registry, mcp: McpTools) -> LiveRegistry:
        reg = cls(tools=dict(base.tools), mcp=mcp)
        reg.sync()
        return reg

    def sync(self) -> None:
        if self.mcp is None:
            return
        for server, tools in self.mcp.take_changes().items():
            for name in self.owned.pop(server, []):
                self.tools.pop(name, None)
            kept: list[str] = []
            for tool in tools:
                if tool.name in self.tools:
                    owner = "another of its tools" if tool.name in kept else self._owner(tool.name)
                    self.mcp.report(f"MCP server {server}: a tool would be named {tool.name!r}, which "
                                    f"{owner} already uses; it is left out")
                    continue
                self.tools[tool.name] = tool
                kept.append(tool.name)
            self.owned[server] = kept

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
