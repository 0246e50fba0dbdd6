"""Run a shell command in the sandbox."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tools.base import Effect, Tool, ToolContext, ToolResult


class ShellArgs(BaseModel):
    command: str = Field(description="A bash command line, run in the sandbox's working directory.")


def run_shell(args: ShellArgs, ctx: ToolContext) -> ToolResult:
    result = ctx.sandbox.exec(args.command, timeout=ctx.timeout_s)
    text = result.output
    if result.output_capped:
        text += "\n[output capped by the sandbox: the command printed more than it keeps]"
    if result.timed_out:
        return ToolResult(
            text + f"\n[timed out after {ctx.timeout_s:g} s; the command was killed]", ok=False, timed_out=True
        )
    if result.exit_code != 0:
        text += f"\n[exit code {result.exit_code}]"
    return ToolResult(text, ok=result.exit_code == 0, exit_code=result.exit_code)


SHELL = Tool(
    name="shell",
    summary="Run a bash command and see its output and exit code.",
    description=(
        "Run a bash command in the sandbox and return its combined stdout and stderr. "
        "A non-zero exit code is reported after the output. Long output keeps its start and end. "
        "Commands that wait for input or run forever are killed at the time limit."
    ),
    args=ShellArgs,
    effect=Effect.WRITE,
    run=run_shell,
)
