"""A server's sampling request (`sampling/createMessage`) as a request to the run's model, and its reply back.

Only a server whose settings allow it (`sampling = true`) is answered, and only during one of its tool calls:
the call's host asks the run's model (journaled and billed to the run, agent/sampling.py). The request is the
server's text: its messages become the model's messages as they are (its images and audio a line saying what
they were), it is sent with no tools and none of the run's context (`includeContext` is ignored), and a request
past REQUEST_CHARS is refused, so a server cannot spend the run's money on a flood. The reply goes back as text.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CreateMessageResult, ErrorData, TextContent
from mcp_types import INVALID_REQUEST

from core.mcp_settings import McpServer
from core.types import Message, ModelReply
from tools.base import CallHost, SamplingRefused

REQUEST_CHARS = 100_000  # a sampling request's text, all messages together


def refused(message: str) -> ErrorData:
    return ErrorData(code=INVALID_REQUEST, message=message)


def not_allowed(server: McpServer, host: CallHost | None) -> ErrorData | None:
    """Why the run's model is not asked for this server, or None when it may be."""
    if not server.sampling:
        return refused(
            f"The harness refuses sampling requests from MCP server {server.name}: its settings do not allow them "
            "(`sampling = true` on the server allows them, answered by the run's model at the run's cost)."
        )
    if host is None:
        return refused(
            f"The harness answers sampling requests from MCP server {server.name} only during one of its tool calls "
            "in a run, where the run's model is at hand."
        )
    return None


def messages_of(params: Any) -> list[Message]:
    """The model's messages for a `CreateMessageRequestParams`; SamplingRefused when it is too long."""
    out = [Message(role="system", text=params.system_prompt)] if params.system_prompt else []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(_text(block) for block in blocks)
        out.append(Message(role="assistant" if message.role == "assistant" else "user", text=text))
    size = sum(len(m.text) for m in out)
    if size > REQUEST_CHARS:
        raise SamplingRefused(
            f"The sampling request holds {size:,} characters, more than the {REQUEST_CHARS:,} the harness sends "
            "to the run's model on a server's behalf."
        )
    return out


def _text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} ({block.mime_type}) not shown: the harness sends only text on a server's behalf]"
    return f"[{kind} content not shown]"


def result_of(reply: ModelReply) -> CreateMessageResult:
    stop = {"stop": "endTurn", "length": "maxTokens"}.get(reply.finish_reason, "endTurn")
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=reply.message.text),
        model=reply.model or "harness",
        stop_reason=stop,
    )
