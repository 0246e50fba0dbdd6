"""Read and write whole files, and replace one exact snippet in a file.

A file the sandbox refuses (missing, read-only, not the user's, a full disk, a pipe that
never ends) is the call's own error: one line with the cause and the path as the sandbox
sees it, never a traceback. Each sandbox call is bounded by the policy's tool timeout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from sandboxes.text import is_binary
from tools.base import Effect, Tool, ToolContext, ToolResult


class ReadArgs(BaseModel):
    path: str = Field(description="File path, relative to the working directory or absolute.")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show, inclusive; omit for the end of the file.")


def refused_by_sandbox(run: Callable[[Any, ToolContext], ToolResult]) -> Callable[[Any, ToolContext], ToolResult]:
    """`run`, with the sandbox's file errors (sandboxes.base.file_error, file_timeout) as results:
    their strerror is the line the model sees. An OSError without one is a fault of the harness."""

    @functools.wraps(run)
    def guarded(args: Any, ctx: ToolContext) -> ToolResult:
        try:
            return run(args, ctx)
        except TimeoutError as e:
            if e.strerror is None:
                raise
            return ToolResult(e.strerror, ok=False, timed_out=True)
        except OSError as e:
            if e.errno is None or e.strerror is None:
                raise
            return ToolResult(e.strerror, ok=False)

    return guarded


def read_file(args: ReadArgs, ctx: ToolContext) -> ToolResult:
    data = ctx.sandbox.read_file(args.path, ctx.timeout_s)
    if is_binary(data):
        return ToolResult(not_text(args.path, data), ok=False)
    lines = data.decode("utf-8").splitlines()
    end = min(args.end_line or len(lines), len(lines))
    if args.start_line > max(len(lines), 1):
        return ToolResult(
            f"{args.path} has {len(lines)} lines; start_line {args.start_line} is past the end.", ok=False
        )
    shown = [f"{n:6d}\t{lines[n - 1]}" for n in range(args.start_line, end + 1)]
    return ToolResult("\n".join(shown) if shown else f"{args.path} is empty.")


class WriteArgs(BaseModel):
    path: str = Field(description="File path; parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


def write_file(args: WriteArgs, ctx: ToolContext) -> ToolResult:
    ctx.sandbox.write_file(args.path, args.content.encode(), ctx.timeout_s)
    return _wrote(args)


def write_file_done(args: WriteArgs, ctx: ToolContext) -> ToolResult | None:
    """After a crash: the write took effect if the file already holds exactly this content."""
    try:
        return _wrote(args) if ctx.sandbox.read_file(args.path, ctx.timeout_s) == args.content.encode() else None
    except OSError:
        return None


def _wrote(args: WriteArgs) -> ToolResult:
    return ToolResult(f"Wrote {len(args.content)} characters to {args.path}.")


class ReplaceArgs(BaseModel):
    path: str = Field(description="File to edit.")
    old: str = Field(min_length=1, description="Exact text to find; it must occur exactly once.")
    new: str = Field(description="Text to put in its place.")


def not_text(path: str, data: bytes) -> str:
    return (
        f"{path} is not text ({len(data):,} bytes; not UTF-8, or with NUL bytes), so it is not shown or edited "
        f"here: look at it with the shell (`file {path}`, `xxd {path} | head`)."
    )


def replace(args: ReplaceArgs, ctx: ToolContext) -> ToolResult:
    data = ctx.sandbox.read_file(args.path, ctx.timeout_s)
    if is_binary(data):  # decoding it with replacements and writing it back would corrupt it
        return ToolResult(not_text(args.path, data), ok=False)
    text = data.decode("utf-8")
    count = text.count(args.old)
    if count == 0:
        return ToolResult(f"No change: the text to replace does not occur in {args.path}.", ok=False)
    if count > 1:
        lines, pos = [], -1
        for _ in range(count):
            pos = text.index(args.old, pos + 1)
            lines.append(str(text.count("\n", 0, pos) + 1))
        return ToolResult(
            f"No change: the text occurs {count} times in {args.path} (starting at lines {', '.join(lines)}); "
            "include more surrounding text so that it occurs exactly once.",
            ok=False,
        )
    ctx.sandbox.write_file(args.path, text.replace(args.old, args.new).encode(), ctx.timeout_s)
    line = text.count("\n", 0, text.index(args.old)) + 1
    return ToolResult(f"Replaced 1 occurrence in {args.path} at line {line}.")


READ_FILE = Tool(
    name="read_file",
    summary="Show a file with line numbers, optionally a line range.",
    description="Show a text file with line numbers. Use start_line and end_line to read part of a long file.",
    args=ReadArgs,
    effect=Effect.READ,
    run=refused_by_sandbox(read_file),
)
WRITE_FILE = Tool(
    name="write_file",
    summary="Create or overwrite a file with the given content.",
    description="Create a file, or overwrite it, with exactly the given content. Parent directories are created.",
    args=WriteArgs,
    effect=Effect.WRITE,
    run=refused_by_sandbox(write_file),
    already_done=write_file_done,
)
REPLACE = Tool(
    name="replace",
    summary="Replace one exact, unique snippet in a file.",
    description=(
        "Replace the exact text `old` with `new` in a file. `old` must occur exactly once: "
        "when it occurs zero or several times nothing changes and the reply says where it occurs."
    ),
    args=ReplaceArgs,
    effect=Effect.WRITE,
    run=refused_by_sandbox(replace),
)
