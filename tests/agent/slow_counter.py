"""Slow tools that append to a counter file, each line tagged with its call's idempotency key.

A kill often lands inside `append` (it sleeps before and after its write), and its `already_done`
check finds the tag, so tests can cut a write short at chosen moments and see it settled exactly once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel

from tools.base import Effect, Tool, ToolContext, ToolResult

COUNTER = "counter.txt"
SLOW_S = 0.03


class AppendArgs(BaseModel):
    value: int


class NoArgs(BaseModel):
    pass


def append(args: AppendArgs, ctx: ToolContext) -> ToolResult:
    time.sleep(SLOW_S)
    # One write(2) of a short line to an O_APPEND file: under SIGKILL it happens whole or not at all.
    fd = os.open(Path(ctx.sandbox.workdir, COUNTER), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{args.value} {ctx.idempotency_key}\n".encode())
    finally:
        os.close(fd)
    time.sleep(SLOW_S)
    return ToolResult(f"appended {args.value}")


def append_done(args: AppendArgs, ctx: ToolContext) -> ToolResult | None:
    path = Path(ctx.sandbox.workdir, COUNTER)
    tags = {line.split()[-1] for line in path.read_text().splitlines() if line.strip()} if path.exists() else set()
    return ToolResult(f"appended {args.value}") if ctx.idempotency_key in tags else None


def read_counter(args: NoArgs, ctx: ToolContext) -> ToolResult:
    path = Path(ctx.sandbox.workdir, COUNTER)
    values = [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []
    return ToolResult(" ".join(values) or "empty")


APPEND = Tool(
    name="append",
    summary="Append a value to the counter file.",
    description="Append a value.",
    args=AppendArgs,
    effect=Effect.WRITE,
    run=append,
    already_done=append_done,
)
READ = Tool(
    name="read_counter",
    summary="Show the counter file.",
    description="Show the values so far.",
    args=NoArgs,
    effect=Effect.READ,
    run=read_counter,
)
