"""An MCP tool result as an observation: text as text, structured content as JSON, the rest as references.

Images, audio and binary resources are not pasted into the prompt: the model
sees what they are (type, size, URI), which is enough to decide what to do next.
The result of an untrusted server is shown as its definitions are: defused and
inside a block naming the server (tools/mcp/text.py). A trusted server's result is
shown as a built-in tool's output is, as written but for control characters: the
user vouched for that server, and its results may be code or data the agent must
copy exactly.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from core.mcp_settings import McpServer
from tools.base import ToolResult
from tools.mcp.text import cap, clean, fenced_result

RESULT_CHARS = 1_000_000  # far beyond any prompt; bounds the cleaning work on a runaway result


def render(result: Any, server: McpServer) -> ToolResult:
    """`result` is an `mcp.types.CallToolResult` from `server`; `is_error` makes an error observation."""
    parts = [_block(block) for block in result.content or []]
    texts = [block.text for block in result.content or [] if getattr(block, "type", None) == "text"]
    structured = result.structured_content
    if structured is not None and not any(_same_json(text, structured) for text in texts):
        parts.append("structured content (JSON):\n" + json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(p for p in parts if p)
    if server.trusted or not text:
        text = clean(cap(text, RESULT_CHARS)) or "(the tool returned no content)"
    else:
        text = fenced_result(server.name, text, RESULT_CHARS)
    return ToolResult(text=text, ok=not result.is_error)


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return media_note(kind, block)
    if kind == "resource_link":
        return f"[resource link: {block.uri}{_about(block.name, block.mime_type, block.size)}]"
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return f"[resource: {res.uri}{_about(None, res.mime_type, len(res.text.encode()))}]\n{res.text}"
        return f"[resource: {res.uri}{_about(None, res.mime_type, decoded_size(res.blob))}, binary, not shown]"
    return f"[unknown content type {kind!r}]"


def _about(name: str | None, mime: str | None, size: int | None) -> str:
    facts = [f for f in (name, mime, f"{size:,} bytes" if size is not None else None) if f]
    return f" ({', '.join(facts)})" if facts else ""


def media_note(kind: str, block: Any) -> str:
    """An image or audio block as what it is, not its bytes, e.g. `[image: image/png, 1,234 bytes, not shown]`."""
    return f"[{kind}: {block.mime_type}, {decoded_size(block.data):,} bytes, not shown]"


def decoded_size(data: str) -> int:
    """How many bytes base64 `data` holds (its own length where it is not base64)."""
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)


def _same_json(text: str, value: Any) -> bool:
    """Whether a text block already says what the structured content says (servers often send both)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    # MCPServer wraps a plain return value as {"result": value}.
    return parsed == value or value == {"result": parsed} or value == {"result": text}
