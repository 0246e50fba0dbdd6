"""`harness tools list`, and the MCP options that `harness tools list` and `harness run` share."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cli.output import console, exits_on_error, print_json, stderr, text
from core.errors import HarnessError
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from tools.builtin import standard_tools
from tools.mcp import with_mcp
from tools.mcp.config import gather
from tools.mcp.text import SUMMARY_CHARS, one_line

McpCommands = Annotated[
    list[str] | None,
    typer.Option("--mcp", help="[NAME=]COMMAND: start an MCP server over stdio; repeat for more. Untrusted."),
]
McpUrls = Annotated[
    list[str] | None,
    typer.Option("--mcp-url", help="[NAME=]URL: a Streamable HTTP MCP server; repeat for more. Untrusted."),
]
McpResources = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-resource",
        help="SERVER:URI: place this MCP resource before the task in the opening prompt; repeat for more.",
    ),
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
    policy: HarnessPolicy,
    commands: list[str] | None,
    urls: list[str] | None,
    configs: list[Path] | None,
    resources: list[str] | None = None,
) -> HarnessPolicy:
    """The policy with the command line's servers and placed resources added, so the run record names them."""
    if not (commands or urls or configs or resources):
        return policy
    servers = servers_from_options(commands, urls, configs, policy.mcp)
    return HarnessPolicy.model_validate(
        {
            **policy.model_dump(),
            "mcp": [s.model_dump() for s in servers],
            "mcp_resources": [*policy.mcp_resources, *(resources or [])],
        }
    )


@app.command("list")
@exits_on_error
def list_command(
    mcp: McpCommands = None,
    mcp_url: McpUrls = None,
    config: McpConfigs = None,
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print JSON: [{kind, name, server, effect, asks_approval, summary}], kind tool, resource, template or "
        "prompt; warnings go to stderr.",
    ),
) -> None:
    """Print every tool (built-in and MCP) with its server, effect, approval default and a one-line summary;
    then what the MCP servers offer the host beside tools: their resources, resource templates and prompts."""
    logging.getLogger("harness.mcp").setLevel(logging.ERROR)  # problems are printed below, once
    said = stderr if as_json else console
    servers = servers_from_options(mcp, mcp_url, config)
    with with_mcp(servers, standard_tools()) as registry:
        rows = []
        for tool in registry:
            server = getattr(registry, "server_of", lambda _: None)(tool.name)
            rows.append(
                {
                    "kind": "tool",
                    "name": tool.name,
                    "server": server or "built-in",
                    "effect": tool.effect.value,
                    "asks_approval": tool.asks_approval,
                    "summary": tool.summary.removeprefix(f"(MCP {server}) ") if server else tool.summary,
                }
            )
        manager = getattr(registry, "mcp", None)
        for server in servers:
            rows += offered(server.name, manager.catalog(server.name)) if manager is not None else []
        problems = list(getattr(manager, "problems", []))
    if as_json:
        print_json(rows)
    else:
        table = Table("tool", "server", "effect", "asks approval", "summary")
        for row in (r for r in rows if r["kind"] == "tool"):
            table.add_row(
                *(text(row[k]) for k in ("name", "server", "effect")),
                "yes" if row["asks_approval"] else "",
                text(row["summary"]),
            )
        console.print(table)
        others = [r for r in rows if r["kind"] != "tool"]
        if others:
            more = Table("resource or prompt", "server", "kind", "summary")
            for row in others:
                more.add_row(*(text(row[k]) for k in ("name", "server", "kind", "summary")))
            console.print(more)
    for problem in problems:
        said.print(text(("warning:", "yellow"), f" {problem}"), soft_wrap=True)


def offered(server: str, catalog: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """A server's resources, templates and prompts as rows; every string is the server's, so cleaned for one line."""
    rows = []
    for kind, key in (("resource", "resources"), ("template", "templates"), ("prompt", "prompts")):
        for item in catalog[key]:
            name = item.uri if kind == "resource" else item.uri_template if kind == "template" else item.name
            about = item.description or getattr(item, "title", None) or getattr(item, "name", "")
            if kind == "prompt" and item.arguments:
                args = ", ".join(f"{a.name}{'' if a.required else '?'}" for a in item.arguments)
                about = f"({args}) {about or ''}"
            if kind != "prompt" and getattr(item, "mime_type", None):
                about = f"[{item.mime_type}] {about or ''}"
            rows.append(
                {
                    "kind": kind,
                    "name": one_line(str(name), 200),
                    "server": server,
                    "effect": None,
                    "asks_approval": False,
                    "summary": one_line(str(about or ""), SUMMARY_CHARS),
                }
            )
    return rows
