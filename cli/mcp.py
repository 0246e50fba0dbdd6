"""`harness tools list`, and the MCP options that `harness tools list` and `harness run` share."""

from __future__ import annotations

import logging
from pathlib import Path
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from core.errors import HarnessError
from core.policy import HarnessPolicy
from tools.builtin import standard_tools
from tools.mcp import with_mcp
from core.mcp_settings import McpServer
from tools.mcp.config import gather

McpCommands = Annotated[
    list[str] | None,
    typer.Option("--mcp", help="[NAME=]COMMAND: start an MCP server over stdio; repeat for more. Untrusted."),
]
McpUrls = Annotated[
    list[str] | None,
    typer.Option("--mcp-url", help="[NAME=]URL: a Streamable HTTP MCP server; repeat for more. Untrusted."),
]
McpConfigs = Annotated[
    list[Path] | None,
    typer.Option("--config", help="A TOML/YAML file whose `mcp` list names MCP servers (a policy file works)."),
]

app = typer.Typer(help="The tools an agent can use: built-in ones and those of MCP servers.", no_args_is_help=True)
console = Console()


def servers_from_options(
    commands: list[str] | None, urls: list[str] | None, configs: list[Path] | None, known: Sequence[McpServer] = ()
) -> list[McpServer]:
    try:
        return gather(commands or [], urls or [], [str(c) for c in configs or []], known)
    except ValueError as e:
        raise HarnessError(str(e)) from None


def with_servers(policy: HarnessPolicy, commands: list[str] | None, urls: list[str] | None,
                 configs: list[Path] | None) -> HarnessPolicy:
    """The policy with the command line's servers added, so the run record names every server."""
    if not (commands or urls or configs):
        return policy
    servers = servers_from_options(commands, urls, configs, policy.mcp)
    return HarnessPolicy.model_validate({**policy.model_dump(), "mcp": [s.model_dump() for s in servers]})


@app.command("list")
def list_command(mcp: McpCommands = None, mcp_url: McpUrls = None, config: McpConfigs = None) -> None:
    """Print every tool (built-in and MCP) with its server, effect, approval default and a one-line summary."""
    logging.getLogger("harness.mcp").setLevel(logging.ERROR)  # problems are printed below, once
    try:
        servers = servers_from_options(mcp, mcp_url, config)
        with with_mcp(servers, standard_tools()) as registry:
            table = Table("tool", "server", "effect", "asks approval", "summary")
            for tool in registry:
                server = getattr(registry, "server_of", lambda _: None)(tool.name)
                summary = tool.summary.removeprefix(f"(MCP {server}) ") if server else tool.summary
                table.add_row(tool.name, server or "built-in", tool.effect.value, "yes" if tool.asks_approval else "",
                              summary)
            console.print(table)
            for problem in getattr(getattr(registry, "mcp", None), "problems", []):
                console.print(f"[yellow]warning:[/] {problem}", soft_wrap=True)
    except HarnessError as e:
        console.print(f"[red]error:[/] {e}", soft_wrap=True)
        raise typer.Exit(2) from None
