"""Progressive disclosure of tools: requests carry one line per tool; `describe_tool` gives the rest.

Full descriptions and JSON schemas are resent with every request, so they are
paid for on every step. Under `DiscloseTools` each request carries only the
name and one-line summary of each tool (with an open argument schema); the
model calls `describe_tool` when it needs the exact arguments, and the answer
lands in the history once, like any observation. The tool list itself never
changes during a run, so it stays a stable prefix. Without the step, it engages by itself once
the tools' schemas pass the policy's `mcp_disclose_over_tokens` (`disclosure`): a hundred MCP
tools would otherwise cost some 35,000 tokens in every request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from pydantic import BaseModel, Field

from core.context_policy import DiscloseTools
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult, openai_schema

OPEN_SCHEMA = {"type": "object", "additionalProperties": True}


class DescribeArgs(BaseModel):
    name: str = Field(description="The tool to describe.")


def describe_tool(tools: Registry) -> Tool:
    def run(args: DescribeArgs, ctx: ToolContext) -> ToolResult:
        tool = tools.get(args.name)
        if tool is None:
            return ToolResult(f"No tool is named {args.name!r}. Tools: {', '.join(tools.names())}.", ok=False)
        return ToolResult(
            f"{tool.name}: {tool.description}\nArguments (JSON schema): {json.dumps(tool.schema(), sort_keys=True)}"
        )

    return Tool(
        name="describe_tool",
        summary="Show a tool's full description and argument schema.",
        description="Show the full description and the JSON schema of a tool's arguments. Call it before first using a tool.",
        args=DescribeArgs,
        effect=Effect.READ,
        run=run,
    )


def with_describe_tool(tools: Registry) -> Registry:
    """The registry the dispatcher uses: the real tools (validating real arguments) plus describe_tool."""
    if tools.get("describe_tool") is not None:
        return tools
    return Registry.of([*tools, describe_tool(tools)])


def summarised(tool: Tool) -> Tool:
    return replace(tool, description=tool.summary, input_schema=OPEN_SCHEMA)


def disclosure(
    context: Iterable[object], tools: Sequence[Tool], over_tokens: int | None, count: Callable[[str], int]
) -> DiscloseTools | None:
    """The context's disclose_tools step; without one, one that engages by itself once the tools' schemas cost
    more than `over_tokens` tokens in every request (`count`: the model's tokenizer), summarising the MCP tools
    (named SERVER__tool) and keeping the built-in ones whole; None: every tool in full."""
    step = next((s for s in context if isinstance(s, DiscloseTools)), None)
    if step is not None or over_tokens is None or not tools or count(tools_text(tools)) <= over_tokens:
        return step
    return DiscloseTools(always_full=[t.name for t in tools if "__" not in t.name])


def request_tools(tools: Iterable[Tool], step: DiscloseTools | None) -> list[Tool]:
    """What the model is sent: full tools, or summaries (describe_tool itself always in full)."""
    if step is None:
        return list(tools)
    keep = {"describe_tool", *step.always_full}
    return [t if t.name in keep else summarised(t) for t in tools]


def tools_text(tools: Sequence[Tool]) -> str:
    """The tool list as canonical JSON: what a request carries, for token accounting."""
    return json.dumps([openai_schema(t) for t in tools], sort_keys=True, separators=(",", ":"))
