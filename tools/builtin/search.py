"""Find files by name and lines by pattern, through the sandbox's own find and grep."""

from __future__ import annotations

import shlex

from pydantic import BaseModel, Field

from tools.base import Effect, Tool, ToolContext, ToolResult

MAX_LINES = 200


class GrepArgs(BaseModel):
    pattern: str = Field(min_length=1, description="Extended regular expression to search for.")
    path: str = Field(".", description="File or directory to search recursively.")
    glob: str | None = Field(None, description="Only search files whose name matches this glob, e.g. '*.py'.")


class FindArgs(BaseModel):
    name: str = Field(min_length=1, description="File name glob, e.g. 'test_*.py'.")
    path: str = Field(".", description="Directory to search.")


def _listing(ctx: ToolContext, command: str, empty: str) -> ToolResult:
    result = ctx.sandbox.exec(f"{command} | head -n {MAX_LINES + 1}", timeout=ctx.timeout_s)
    if result.timed_out:
        return ToolResult(result.output + "\n[search timed out]", ok=False, timed_out=True)
    lines = result.output.splitlines()
    if not lines:
        return ToolResult(empty)
    more = f"\n[more than {MAX_LINES} results; narrow the search]" if len(lines) > MAX_LINES else ""
    return ToolResult("\n".join(lines[:MAX_LINES]) + more)


def grep(args: GrepArgs, ctx: ToolContext) -> ToolResult:
    include = f" --include={shlex.quote(args.glob)}" if args.glob else ""
    cmd = f"grep -rnIE{include} --exclude-dir=.git -e {shlex.quote(args.pattern)} {shlex.quote(args.path)} 2>&1"
    return _listing(ctx, cmd, f"No line matches {args.pattern!r} under {args.path}.")


def find(args: FindArgs, ctx: ToolContext) -> ToolResult:
    cmd = f"find {shlex.quote(args.path)} -name .git -prune -o -name {shlex.quote(args.name)} -print 2>&1 | sort"
    return _listing(ctx, cmd, f"No file named {args.name!r} under {args.path}.")


GREP = Tool(
    name="grep",
    summary="Search file contents for a regular expression.",
    description=f"Search files recursively for lines matching an extended regular expression; shows file:line:text, at most {MAX_LINES} lines.",
    args=GrepArgs,
    effect=Effect.READ,
    run=grep,
)
FIND = Tool(
    name="find",
    summary="Find files by name.",
    description=f"List files under a directory whose name matches a glob, at most {MAX_LINES}.",
    args=FindArgs,
    effect=Effect.READ,
    run=find,
)
