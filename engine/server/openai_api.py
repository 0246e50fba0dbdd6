"""POST /v1/chat/completions: OpenAI Chat Completions over the engine, with SSE streaming."""

import json
import time
import uuid
from collections.abc import AsyncIterator

from engine.chat import ChatReply, ChatRequest
from engine.output import RequestOutput
from engine.server import openai_schemas as oa
from engine.server.errors import APIError, openai_body, validated
from engine.server.service import Service, unsent


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content)


def refuse_unsupported(body: oa.ChatCompletionRequest) -> None:
    """A parameter that would change the reply, but which this server does not implement, is a 400
    rather than silently dropped: the client would otherwise trust a reply made without it."""
    asked = {
        "logprobs": body.logprobs is True,
        "top_logprobs": bool(body.top_logprobs),
        "presence_penalty": bool(body.presence_penalty),
        "frequency_penalty": bool(body.frequency_penalty),
        "logit_bias": bool(body.logit_bias),
    }
    for param, set_ in asked.items():
        if set_:
            raise APIError(
                400,
                f"this server does not support `{param}`; leave it out (or at its default) and send the request again",
                param=param,
                code="unsupported_parameter",
            )


def to_chat(body: oa.ChatCompletionRequest) -> ChatRequest:
    """The API's request as the engine's ChatRequest; raises APIError for what validation cannot see."""
    refuse_unsupported(body)
    messages: list[dict] = []
    call_ids: set[str] = set()
    for i, m in enumerate(body.messages):
        if isinstance(m, oa.SystemMessage):
            messages.append({"role": "system", "content": _text(m.content)})
        elif isinstance(m, oa.UserMessage):
            messages.append({"role": "user", "content": _text(m.content)})
        elif isinstance(m, oa.AssistantMessage):
            calls = [{"id": c.id, "type": "function", "function": c.function.model_dump()} for c in m.tool_calls or []]
            call_ids.update(c.id for c in m.tool_calls or [])
            messages.append({"role": "assistant", "content": _text(m.content), "tool_calls": calls})
        else:
            if m.tool_call_id not in call_ids:
                raise APIError(
                    400,
                    f"messages[{i}] is a tool result for call {m.tool_call_id!r}, which no earlier assistant message made",
                    param=f"messages.{i}.tool_call_id",
                )
            messages.append({"role": "tool", "content": _text(m.content), "tool_call_id": m.tool_call_id})
    tools = [t.function.model_dump(exclude_none=True) for t in body.tools or []]
    choice, name = "auto", None
    if isinstance(body.tool_choice, oa.NamedToolChoice):
        choice, name = "tool", body.tool_choice.function.name
    elif body.tool_choice is not None:
        choice = body.tool_choice
    fmt, schema = "text", None
    if body.response_format is not None:
        fmt = body.response_format.type
        if fmt == "json_schema":
            if body.response_format.json_schema is None:
                raise APIError(
                    400, "response_format of type json_schema needs a `json_schema` object", param="response_format"
                )
            schema = body.response_format.json_schema.schema_
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    return ChatRequest(
        messages=messages,
        tools=[{"type": "function", "function": t} for t in tools],
        tool_choice=choice,
        tool_name=name,
        response_format=fmt,
        response_schema=schema,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=1.0 if body.top_p is None else body.top_p,
        seed=body.seed,
        stop=stop,
    )


def parse(raw: bytes) -> oa.ChatCompletionRequest:
    return validated(oa.ChatCompletionRequest, raw)


def _usage(prompt: int, cached: int, completion: int) -> oa.UsageOut:
    return oa.UsageOut(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details=oa.PromptTokensDetails(cached_tokens=cached),
    )


def _finish_reason(reply: ChatReply) -> str:
    return {"tool_calls": "tool_calls", "length": "length"}.get(reply.finish_reason, "stop")


def _calls(reply: ChatReply) -> list[oa.ToolCallOut]:
    return [
        oa.ToolCallOut(id=f"call_{uuid.uuid4().hex[:24]}", function=oa.FunctionOut(name=c.name, arguments=c.arguments))
        for c in reply.tool_calls
    ]


def completion(reply: ChatReply, model: str) -> oa.ChatCompletion:
    calls = _calls(reply)
    return oa.ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=model,
        choices=[
            oa.Choice(
                message=oa.ResponseMessage(
                    content=reply.content if reply.content or not calls else None, tool_calls=calls or None
                ),
                finish_reason=_finish_reason(reply),
            )
        ],
        usage=_usage(reply.prompt_tokens, reply.cached_tokens, reply.completion_tokens),
        timings=oa.Timings(ttft_ms=None if reply.ttft_s is None else round(reply.ttft_s * 1000, 3)),
    )


async def stream_events(service: Service, chat: ChatRequest, body: oa.ChatCompletionRequest) -> AsyncIterator[str]:
    """Submits first (so a bad request is a 4xx, not a broken stream), then yields SSE lines."""
    _, deltas = await service.stream(chat)
    return _sse(service, chat, body, deltas)


async def _sse(service: Service, chat: ChatRequest, body: oa.ChatCompletionRequest, deltas) -> AsyncIterator[str]:
    cid, created, model = f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), body.model

    def chunk(delta: oa.Delta, finish=None, usage=None, choices=True) -> str:
        c = oa.ChatCompletionChunk(
            id=cid,
            created=created,
            model=model,
            choices=[oa.ChunkChoice(delta=delta, finish_reason=finish)] if choices else [],
            usage=usage,
        )
        return "data: " + c.model_dump_json() + "\n\n"

    yield chunk(oa.Delta(role="assistant", content=""))
    output: RequestOutput | None = None
    streamed = ""
    async for d in deltas:
        if d.text:
            streamed += d.text
            yield chunk(oa.Delta(content=d.text))
        output = d.output or output
    try:
        reply = service.finish(chat, output)
    except APIError as e:
        service.metrics.request("openai", e.status)  # the 200 was sent already; count the failure too
        yield "data: " + json.dumps(openai_body(e)) + "\n\n"
        return
    if rest := unsent(streamed, reply.content):
        yield chunk(oa.Delta(content=rest))
    calls = _calls(reply)
    if calls:
        yield chunk(
            oa.Delta(tool_calls=[oa.DeltaToolCall(index=i, id=c.id, function=c.function) for i, c in enumerate(calls)])
        )
    yield chunk(oa.Delta(), finish=_finish_reason(reply))
    if body.stream_options is not None and body.stream_options.include_usage:
        yield chunk(
            oa.Delta(), usage=_usage(reply.prompt_tokens, reply.cached_tokens, reply.completion_tokens), choices=False
        )
    yield "data: [DONE]\n\n"
