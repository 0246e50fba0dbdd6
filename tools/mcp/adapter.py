"""One MCP tool as a harness tool: its namespaced name, its effect, its fenced description, its schema.

Annotations are hints from the server; a tool is `read` only when its server
is marked trusted *and* it declares `readOnlyHint`. Everything else is `write`,
which journals an intent before each call and, from an untrusted server, asks
for approval unless the server's `approve` setting says otherwise; a write that
declares `destructiveHint: true` asks even from a trusted server, unless `approve`
is set. Hints can only tighten the rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.mcp_settings import McpServer
from tools.base import CallHost, Effect, FreeArgs, Tool, ToolContext, ToolResult
from tools.mcp.text import SUMMARY_CHARS, clean_schema, fenced, one_line, schema_prose

NAME_CHARS = 64  # what OpenAI and Anthropic accept for a tool name
# A larger input schema, measured after its strings are capped, leaves its tool out: it would
# cost about 4,000 tokens in every request, several times what real tools need, and cutting
# parts of it would change what the server expects.
SCHEMA_CHARS = 16_000
SEPARATOR = "__"

# (name on the server, arguments, timeout_s, recorded answers to its questions, the run's side of the call)
Call = Callable[[str, dict[str, Any], float, Sequence[Mapping[str, Any]], CallHost | None], ToolResult]


def tool_name(server: str, name: str) -> str:
    """`server__tool`, with characters providers reject replaced by `_`, at most 64 characters."""
    return f"{server}{SEPARATOR}{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"[:NAME_CHARS]


def effect_of(server: McpServer, annotations: Any) -> Effect:
    read_only = annotations is not None and getattr(annotations, "read_only_hint", None) is True
    return Effect.READ if server.trusted and read_only else Effect.WRITE


def asks_approval(server: McpServer, effect: Effect, annotations: Any = None) -> bool:
    """The server's `approve` setting; a write that declares `destructiveHint: true` asks where only the
    default (a trusted server's "never") would let it through: a hint may tighten the rules, never loosen them."""
    destructive = annotations is not None and getattr(annotations, "destructive_hint", None) is True
    if server.approve is None and effect is Effect.WRITE and destructive:
        return True
    return server.approval == "always" or (server.approval == "writes" and effect is Effect.WRITE)


def input_schema(server: McpServer, spec: Any) -> tuple[dict[str, Any], list[str]]:
    """The tool's schema, cleaned; an untrusted server's without its words, which are returned apart (one line
    per argument) to be shown inside the fence with the description."""
    schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
    left_out = f"MCP server {server.name}: tool {one_line(spec.name, 80)!r} is left out: its input schema"
    try:
        schema = clean_schema({**schema, "type": "object"})
    except ValueError as e:
        raise ValueError(f"{left_out} is {e}") from None
    size = len(json.dumps(schema, ensure_ascii=False))
    if size > SCHEMA_CHARS:
        raise ValueError(f"{left_out} has {size:,} characters even with each string capped (limit {SCHEMA_CHARS:,})")
    return (schema, []) if server.trusted else schema_prose(schema)


def adapt(server: McpServer, spec: Any, call: Call) -> Tool:
    """`spec` is an `mcp.types.Tool`; `call` reaches the server. Raises ValueError for a tool left out."""
    effect = effect_of(server, spec.annotations)
    title = spec.title or (spec.annotations.title if spec.annotations is not None else None)
    remote = spec.name

    def run(args: FreeArgs, ctx: ToolContext) -> ToolResult:
        return call(remote, args.model_dump(mode="json"), server.timeout_s or ctx.timeout_s, ctx.inputs, ctx.host)

    summary = one_line(title or spec.description, SUMMARY_CHARS) or one_line(remote, SUMMARY_CHARS)
    schema, arguments = input_schema(server, spec)
    return Tool(
        name=tool_name(server.name, remote),
        summary=f"(MCP {server.name}) {summary}",
        description=fenced(server.name, server.trusted, title, spec.description, arguments),
        args=FreeArgs,
        effect=effect,
        run=run,
        input_schema=schema,
        asks_approval=asks_approval(server, effect, spec.annotations),
    )
