"""The `run_code` tool: the model writes a short Python program that calls the run's tools as functions, and
gets one observation back: what the program printed, how it ended, then what changed (its calls, the files it
created, changed or deleted in the workspace, and the state beyond the files, such as a chess position).

The program runs in the run's sandbox (runner.py); its calls come back over the channel (channel.py) and go
through the dispatcher like direct calls (ToolContext.call), so they are validated, journaled and answered the
same way, and a failed one raises ToolError with the text a direct call would have shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from core.policy import CodeLimits
from tools.base import Effect, Tool, ToolContext, ToolResult
from tools.code_mode.channel import ARGV, Ran, serve
from tools.code_mode.namespace import api_text, function_specs

NAME = "run_code"
LISTED = 8  # files of each kind the account names before "and N more"
DESCRIPTION = """Run a short Python program in the sandbox. The run's tools are functions of its namespace, called \
with keyword arguments; each returns the tool's output as text, or raises ToolError carrying the error a direct \
call would show. You get one observation back: what the program printed (print what you need to see), how it \
ended, then what changed: its tool calls and the files it created, changed or deleted. Limits: {timeout:g} s, \
{calls} tool calls, {chars} printed characters. The program has no network and touches files only in the \
workspace; commands run through shell(). Functions:
{api}"""


class CodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=1, description="The Python program to run.")


def run_code_tool(tools: Sequence[Tool], limits: CodeLimits, world: Callable[[], str] | None = None) -> Tool:
    """run_code over `tools` (those a program may call); `world`: the state beyond the files, shown after."""
    functions = function_specs(tools)

    def run(args: CodeArgs, ctx: ToolContext) -> ToolResult:
        if ctx.program is None:
            return ToolResult("run_code runs only where the harness dispatches its calls.", ok=False)
        process = ctx.sandbox.attach(ARGV)
        try:
            ran = serve(process, args.code, functions, limits, ctx.program)
        finally:
            process.close()
        return result(ran, limits, world() if world is not None else None)

    return Tool(
        name=NAME,
        summary="Run a Python program that calls the tools as functions; one observation comes back.",
        description=DESCRIPTION.format(
            timeout=limits.timeout_s, calls=limits.max_calls, chars=limits.max_output_chars, api=api_text(tools)
        ),
        args=CodeArgs,
        effect=Effect.WRITE,
        run=run,
        resumes=True,
    )


def result(ran: Ran, limits: CodeLimits, world: str | None) -> ToolResult:
    """The observation: printed text, how it ended, the account of what changed."""
    parts = [ran.text if ran.text else "(the program printed nothing)"]
    ending = ending_text(ran, limits)
    if ending:
        parts.append(ending)
    parts.append(calls_text(ran))
    if ran.changes is not None:
        parts.append(files_text(ran.changes))
    else:
        parts.append("[files: not compared (the program did not report, or the workspace is too large)]")
    if world is not None:
        parts.append(f"[now: {world}]")
    submission = next((r.submission for _, r in ran.calls if r.submission is not None), None)
    ended = next((r.end for _, r in ran.calls if r.end is not None and r.ok), None)
    return ToolResult(
        "\n".join(parts),
        ok=ran.outcome == "ok" or (ran.outcome == "ended" and ended is not None),
        timed_out=ran.outcome in ("timeout", "killed"),
        submission=submission,
        rejects_later=ended,
    )


def ending_text(ran: Ran, limits: CodeLimits) -> str:
    if ran.outcome == "ok":
        return ""
    if ran.outcome == "syntax":
        return f"[the program did not run: {ran.error}]"
    if ran.outcome == "error":
        return f"[the program failed]\n{ran.error}"
    if ran.outcome == "ended" and ran.calls and ran.calls[-1][1].ok:
        tool, reply = ran.calls[-1]
        return f"[the program was stopped at its call to {tool}, which changed the world under it: {reply.text}]"
    if ran.outcome in ("timeout", "flood", "ended"):
        return f"[the program was stopped: {ran.error}]"
    if ran.outcome == "killed":
        return (
            f"[the program was killed: it did not finish within its time limit of {limits.timeout_s:g} s and did "
            "not answer after it (a long call into native code); what it printed last may be missing]"
        )
    said = f": {ran.stray.strip()}" if ran.stray.strip() else ""
    return f"[the program ended without reporting how{said}]"


def calls_text(ran: Ran) -> str:
    if not ran.calls:
        return "[calls: none]"
    counts = Counter(tool for tool, _ in ran.calls)
    line = f"[calls: {len(ran.calls)} ({', '.join(f'{t} ×{n}' for t, n in counts.items())})"
    failed = [(i, tool, r) for i, (tool, r) in enumerate(ran.calls, 1) if not r.ok]
    if failed:
        i, tool, r = failed[0]
        first = r.text.strip().splitlines()[0][:200] if r.text.strip() else r.status
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        line += f"; call {i} ({tool}) failed: {first}{more}"
    return line + "]"


def files_text(changes: dict[str, list[str]]) -> str:
    said = []
    for kind in ("created", "changed", "deleted"):
        paths = changes.get(kind, [])
        if paths:
            more = f" and {len(paths) - LISTED} more" if len(paths) > LISTED else ""
            said.append(f"{kind} {', '.join(paths[:LISTED])}{more}")
    return f"[files: {'; '.join(said)}]" if said else "[files: none changed]"
