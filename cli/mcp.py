"""`harness tools list`, and the MCP options that `harness tools list` and `harness run` share."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.output import console, exits_on_error, print_json, stderr, text
from core.errors import HarnessError
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from tools.builtin import standard_tools
from tools.mcp import with_mcp
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


def servers_from_options(
    commands: list[str] | None, urls: list[str] | None, configs: list[Path] | None, known: Sequence[McpServer] = ()
) -> list[McpServer]:
    try:
        return gather(commands or [], urls or [], [str(c) for c in configs or []], known)
    except ValueError as e:
        raise HarnessError(str(e)) from None


def with_servers(
    policy: HarnessPolicy, commands: list[str] | None, urls: list[str] | None, configs: list[Path] | None
) -> HarnessPolicy:
    """The policy with the command line's servers added, so the run record names every server."""
    if not (commands or urls or configs):
        return policy
    servers = servers_from_options(commands, urls, configs, policy.mcp)
    return HarnessPolicy.model_validate({**policy.model_dump(), "mcp": [s.model_dump() for s in servers]})


@app.command("list")
@exits_on_error
def list_command(
    mcp: McpCommands = None,
    mcp_url: McpUrls = None,
    config: McpConfigs = None,
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the tools as JSON: [{name, server, effect, asks_approval, summary}]; warnings go to stderr.",
    ),
) -> None:
    """Print every tool (built-in and MCP) with its server, effect, approval default and a one-line summary."""
    logging.getLogger("harness.mcp").setLevel(logging.ERROR)  # problems are printed below, once
    said = stderr if as_json else console
    servers = servers_from_options(mcp, mcp_url, config)
    with with_mcp(servers, standard_tools()) as registry:
        rows = []
        for tool in registry:
            server = getattr(registry, "server_of", lambda _: None)(tool.name)
            rows.append(
                {
                    "name": tool.name,
                    "server": server or "built-in",
                    "effect": tool.effect.value,
                    "asks_approval": tool.asks_approval,
                    "summary": tool.summary.removeprefix(f"(MCP {server}) ") if server else tool.summary,
                }
            )
        problems = list(getattr(getattr(registry, "mcp", None), "problems", []))
    if as_json:
        print_json(rows)
    else:
        table = Table("tool", "server", "effect", "asks approval", "summary")
        for row in rows:
            table.add_row(
                *(text(row[k]) for k in ("name", "server", "effect")),
                "yes" if row["asks_approval"] else "",
                text(row["summary"]),
            )
        console.print(table)
    for problem in problems:
        said.print(text(("warning:", "yellow"), f" {problem}"), soft_wrap=True)
