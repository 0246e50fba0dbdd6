"""POST /v1/messages: the Anthropic Messages API over the engine, with its streaming events."""

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator

from engine.chat import ChatReply, ChatRequest
from engine.output import RequestOutput
from engine.server import anthropic_schemas as an
from engine.server.errors import APIError, anthropic_body, validated
from engine.server.service import Service, unsent


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content)


def conversation(body: an.Conversation) -> ChatRequest:
    """The prompt's part of a request (messages, tools, tool_choice, output format) as a ChatRequest."""
    if body.thinking is not None and body.thinking.type != "disabled":
        raise APIError(
            400,
            f"thinking of type {body.thinking.type!r} is not supported: this model does not think; "
            "leave `thinking` out and send the request again",
            param="thinking",
        )
    messages: list[dict] = []
    if body.system:
        messages.append({"role": "system", "content": _text(body.system)})
    call_ids: set[str] = set()
    for i, m in enumerate(body.messages):
        blocks = [an.TextBlock(type="text", text=m.content)] if isinstance(m.content, str) else m.content
        if m.role == "assistant":
            text, calls = "", []
            for b in blocks:
                if isinstance(b, an.TextBlock):
                    text += b.text
                elif isinstance(b, an.ToolUseBlock):
                    call_ids.add(b.id)
                    calls.append(
                        {
                            "id": b.id,
                            "type": "function",
                            "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)},
                        }
                    )
                elif isinstance(b, an.ToolResultBlock):
                    raise APIError(
                        400, f"messages.{i}: tool_result blocks belong in user messages", param=f"messages.{i}"
                    )
                # thinking blocks: this model does not think, so there is nothing to render
            messages.append({"role": "assistant", "content": text, "tool_calls": calls})
            continue
        text = ""
        for b in blocks:
            if isinstance(b, an.ToolResultBlock):
                if b.tool_use_id not in call_ids:
                    raise APIError(
                        400,
                        f"messages.{i}: tool_result for {b.tool_use_id!r}, which no earlier tool_use block has",
                        param=f"messages.{i}",
                    )
                content = b.content if isinstance(b.content, str) else _text(b.content)
                messages.append(
                    {
                        "role": "tool",
                        "content": ("Error: " if b.is_error else "") + content,
                        "tool_call_id": b.tool_use_id,
                    }
                )
            elif isinstance(b, an.TextBlock):
                text += b.text
            else:
                raise APIError(400, f"messages.{i}: a user message cannot hold {b.type} blocks", param=f"messages.{i}")
        if text:
            messages.append({"role": "user", "content": text})
        elif not any(isinstance(b, an.ToolResultBlock) for b in blocks):
            raise APIError(
                400,
                f"messages.{i}: a user message must not be empty; send its text or tool results",
                param=f"messages.{i}",
            )
    tools = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
        }
        for t in body.tools or []
    ]
    choice, name = "auto", None
    if body.tool_choice is not None:
        kind = body.tool_choice.type
        choice = {"any": "required", "tool": "tool"}.get(kind, kind)
        name = body.tool_choice.name
        if kind == "tool" and not name:
            raise APIError(400, "tool_choice of type tool needs a `name`", param="tool_choice.name")
    output = body.output_config.format if body.output_config is not None else None
    return ChatRequest(
        messages=messages,
        tools=tools,
        tool_choice=choice,
        tool_name=name,
        response_format="text" if output is None else "json_schema",
        response_schema=None if output is None else output.schema_,
        continue_final=prefilled(messages, len(body.messages) - 1),
    )


def prefilled(messages: list[dict], last: int) -> bool:
    """Whether the conversation ends with the start of the reply (text in a final assistant message), which
    the reply continues, as the Messages API does."""
    final = messages[-1]
    if final["role"] != "assistant" or final["tool_calls"] or not final["content"]:
        return False
    if final["content"] != final["content"].rstrip():
        raise APIError(
            400,
            f"messages.{last}: the final assistant content cannot end with trailing whitespace; strip it",
            param=f"messages.{last}",
        )
    return True


def to_chat(body: an.MessagesRequest) -> ChatRequest:
    return dataclasses.replace(
        conversation(body),
        max_tokens=body.max_tokens,
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=1.0 if body.top_p is None else body.top_p,
        top_k=body.top_k or 0,
        stop=list(body.stop_sequences or []),
    )


def parse(raw: bytes) -> an.MessagesRequest:
    return validated(an.MessagesRequest, raw)


def parse_conversation(raw: bytes) -> an.Conversation:
    """A count_tokens body: a Messages request without what only generation needs (max_tokens, sampling)."""
    return validated(an.Conversation, raw)


def usage(prompt: int, cached: int, written: int, completion: int) -> an.UsageOut:
    return an.UsageOut(
        input_tokens=prompt - cached - written,
        output_tokens=completion,
        cache_read_input_tokens=cached,
        cache_creation_input_tokens=written,
    )


def _stop_reason(reply: ChatReply) -> str:
    if reply.finish_reason == "tool_calls":
        return "tool_use"
    if reply.finish_reason == "length":
        return "max_tokens"
    return "stop_sequence" if reply.stop_sequence else "end_turn"


def _content(reply: ChatReply) -> list:
    blocks: list = [an.TextOut(text=reply.content)] if reply.content else []
    for c in reply.tool_calls:
        try:
            args = json.loads(c.arguments)
        except ValueError:
            args = None
        if isinstance(args, dict):
            blocks.append(an.ToolUseOut(id=f"toolu_{uuid.uuid4().hex[:24]}", name=c.name, input=args))
        else:  # the Messages API carries tool input as an object only: show the rest as text
            blocks.append(
                an.TextOut(text=f'<tool_call>{{"name": {json.dumps(c.name)}, "arguments": {c.arguments}}}</tool_call>')
            )
    return blocks


def message(reply: ChatReply, model: str) -> an.MessageOut:
    return an.MessageOut(
        id=f"msg_{uuid.uuid4().hex[:24]}",
        model=model,
        content=_content(reply),
        stop_reason=_stop_reason(reply),
        stop_sequence=reply.stop_sequence,
        usage=usage(reply.prompt_tokens, reply.cached_tokens, reply.cache_write_tokens, reply.completion_tokens),
    )


async def stream_events(service: Service, chat: ChatRequest, body: an.MessagesRequest) -> AsyncIterator[str]:
    first, deltas = await service.stream(chat)
    return _sse(service, chat, body, first, deltas)


def _event(kind: str, data: dict) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


async def _sse(
    service: Service, chat: ChatRequest, body: an.MessagesRequest, first: RequestOutput, deltas
) -> AsyncIterator[str]:
    block = service.engine.config.block_size
    cached = first.usage.cached_tokens
    written = max(0, first.usage.prompt_tokens // block * block - cached) if service.engine.radix is not None else 0
    start = an.MessageOut(
        id=f"msg_{uuid.uuid4().hex[:24]}",
        model=body.model,
        content=[],
        stop_reason=None,
        usage=usage(first.usage.prompt_tokens, cached, written, 1),
    )
    yield _event("message_start", {"message": start.model_dump()})
    index, text_open, streamed = 0, False, ""
    output: RequestOutput | None = None
    async for d in deltas:
        if d.text:
            if not text_open:
                yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
                text_open = True
            streamed += d.text
            yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": d.text}})
        output = d.output or output
    try:
        reply = service.finish(chat, output)
    except APIError as e:
        service.metrics.request("anthropic", e.status)  # the 200 was sent already; count the failure too
        yield _event("error", {"error": anthropic_body(e)["error"]})
        return
    if text_open:
        if rest := unsent(streamed, reply.content):
            yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": rest}})
        yield _event("content_block_stop", {"index": index})
        index += 1
    for b in _content(reply):
        if isinstance(b, an.TextOut):
            if text_open:
                continue  # the visible text was streamed already
            yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": b.text}})
        else:
            yield _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "tool_use", "id": b.id, "name": b.name, "input": {}}},
            )
            yield _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(b.input)}},
            )
        yield _event("content_block_stop", {"index": index})
        index += 1
    final = usage(reply.prompt_tokens, reply.cached_tokens, reply.cache_write_tokens, reply.completion_tokens)
    yield _event(
        "message_delta",
        {
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": reply.stop_sequence},
            "usage": final.model_dump(),
        },
    )
    yield _event("message_stop", {})
