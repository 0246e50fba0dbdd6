"""Text-based actions as calls of a `bash` tool, and shell output as their results.

A text-based agent (mini-swe-agent v1, SWE-agent without function calling) writes its command in a fenced
block of its reply and is answered with a user message. Imported, the block becomes the arguments of a
`bash` call and the answer its result, so reports count tool calls and failures as they do for our runs.
The reply's text keeps everything but the block, so the command is not counted twice in a re-rendered prompt.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from evals.interop.imports.form import Call, Result, Tool
from evals.interop.imports.text import arguments_text, fields, items

# mini-swe-agent's default action_regex (v1: ```bash, v2 text-based: ```mswea_bash_command)
FENCED = r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```"
RETURNCODE = re.compile(r"\A\s*<returncode>\s*(-?\d+)\s*</returncode>")
TIMED_OUT = re.compile(r"\AThe last command <command>.*?</command> timed out", re.DOTALL)
BASH = Tool(
    name="bash",
    description="Run a shell command (imported: the source agent wrote it as a fenced block of its reply).",
)


def bash_call(call_id: str, command: str) -> Call:
    return Call(id=call_id, name="bash", arguments=json.dumps({"command": command}))


def openai_calls(tool_calls: Any, id_prefix: str) -> list[Call]:
    """A reply's `tool_calls` as OpenAI's chat format writes them (mini-swe-agent 2.x, SWE-agent); a call the
    file gives no id gets `{id_prefix}_{i}`."""
    calls = []
    for i, tc in enumerate(items(tool_calls)):
        fn = fields(fields(tc).get("function"))
        calls.append(
            Call(
                id=str(fields(tc).get("id") or f"{id_prefix}_{i}"),
                name=str(fn.get("name", "")),
                arguments=arguments_text(fn.get("arguments")),
            )
        )
    return calls


def split_action(text: str, pattern: str = FENCED) -> tuple[str, list[str]]:
    """The reply's text without its fenced blocks, and the commands in them (the source ran one only when
    there was exactly one)."""
    blocks = list(re.finditer(pattern, text, re.DOTALL))
    if len(blocks) != 1:
        return text, [b.group(1).strip() for b in blocks]
    block = blocks[0]
    rest = (text[: block.start()].rstrip() + "\n\n" + text[block.end() :].lstrip()).strip()
    return rest, [block.group(1).strip()]


def shell_result(call_id: str, text: str, exit_code: int | None = None) -> Result:
    """A shell command's output as a result: its status from the return code the text (or the source) gives."""
    if exit_code is None:
        found = RETURNCODE.match(text)
        exit_code = int(found.group(1)) if found else None
    if TIMED_OUT.match(text):
        return Result(call_id=call_id, text=text, status="timeout", error_kind="timeout", exit_code=exit_code)
    if exit_code not in (None, 0):
        return Result(call_id=call_id, text=text, status="error", error_kind="nonzero_exit", exit_code=exit_code)
    return Result(call_id=call_id, text=text, exit_code=exit_code)


def kept_result(call_id: str, text: str, kept: dict[str, Any]) -> Result | None:
    """A result with the status, error kind, exit code and duration a writer kept beside it (this harness's
    exports keep them where ATIF and Inspect have no field); None where it kept none."""
    if kept.get("status") is None:
        return None
    fields = {k: kept[k] for k in ("status", "error_kind", "exit_code", "duration_s") if kept.get(k) is not None}
    try:
        return Result.model_validate({"call_id": call_id, "text": text, **fields})
    except ValidationError:
        return None
