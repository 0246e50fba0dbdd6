"""Hermes-style tool calling: how tools and calls are written into a prompt, and
how generated text is turned back into structured calls.

    system prompt:  ... <tools>{"type": "function", "function": {...}}</tools> ...
    reply:          <tool_call>{"name": "f", "arguments": {...}}</tool_call>
    tool result:    <tool_response>...</tool_response>   (in a user turn)

The parser is total: whatever the model emits, it returns a `ParsedReply`, never raises.
"""

import json
import re
from dataclasses import dataclass, field

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


@dataclass
class ToolCall:
    name: str
    arguments: str  # the raw JSON text of the arguments, as a provider API carries it


@dataclass
class ParsedReply:
    content: str  # the text with every <tool_call> block removed
    tool_calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per block that was not a valid call


def normalise_tool(tool: dict) -> dict:
    """Accept OpenAI-style {"type": "function", "function": {...}} or a bare function schema."""
    if isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return tool
    return {"type": "function", "function": tool}


def tools_system_block(tools: list[dict]) -> str:
    lines = "".join("\n" + json.dumps(normalise_tool(t), ensure_ascii=False) for t in tools)
    return TOOLS_PREAMBLE + lines + TOOLS_POSTAMBLE


def _text(content) -> str:
    """Message content may be a string, None, or a list of OpenAI-style parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _call_text(call: dict) -> str:
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass  # keep the raw string: the model should see what it sent
    return (
        "<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False) + "\n</tool_call>"
    )


def to_plain_messages(messages: list[dict], tools: list[dict] | None = None) -> list[dict]:
    """Rewrite tool definitions, calls and results into plain role/content messages,
    so any chat template (even one with no tool support, like SmolLM2's) can render them."""
    out: list[dict] = []
    for m in messages:
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            parts = [content] if content else []
            parts += [_call_text(c) for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            block = "<tool_response>\n" + content + "\n</tool_response>"
            # Consecutive results go into one user turn, as Hermes/Qwen templates do.
            if out and out[-1].get("_tool_turn"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_turn": True})
        else:
            out.append({"role": role, "content": content})
    for m in out:
        m.pop("_tool_turn", None)
    if tools:
        block = tools_system_block(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)


def _parse_one(body: str) -> ToolCall | str:
    body = body.strip()
    if body.startswith("```"):  # some models fence the JSON
        body = body.strip("`").removeprefix("json").strip()
    try:
        obj, _ = json.JSONDecoder().raw_decode(body)
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        return f"invalid JSON in <tool_call>: {e.__class__.__name__}: {str(e)[:200]}"
    if not isinstance(obj, dict):
        return f"<tool_call> holds a {type(obj).__name__}, expected an object with name and arguments"
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return "<tool_call> object has no string 'name'"
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        return ToolCall(name, args)
    try:
        return ToolCall(name, json.dumps(args, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError) as e:
        return f"cannot encode arguments of {name}: {e}"


def parse_tool_calls(text: str) -> ParsedReply:
    """Split generated text into visible content and tool calls. Never raises."""
    if not isinstance(text, str):
        text = str(text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    for match in _BLOCK.finditer(text):
        result = _parse_one(match.group(1))
        if isinstance(result, ToolCall):
            calls.append(result)
        else:
            errors.append(result)
    content = _BLOCK.sub("", text).strip() if calls or errors else text
    return ParsedReply(content, calls, errors)
