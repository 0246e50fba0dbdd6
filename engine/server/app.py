"""The FastAPI app: OpenAI and Anthropic chat endpoints, models, health and metrics.

    app = create_app(Engine(), ["smollm2"])
    uvicorn.run(app, host="127.0.0.1", port=8000)

Request bodies are parsed by hand (pydantic, strict) rather than by FastAPI, so every
malformed request gets a 4xx in the shape of the API it was sent to. A body is read
with a size cap (413) and a deadline (408), so a client cannot hold a connection with a
half-sent body (run.py gives headers the same deadline); a client that hangs up is one
line in the log. An unexpected failure becomes a counted 500 inside the handler rather
than escaping to the ASGI server, which would drop the kept-alive connection. A
non-streamed request is aborted when its client disconnects, like a streamed one.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from engine.chat import ChatReply
from engine.engine import Engine
from engine.server import anthropic_api, openai_api
from engine.server import anthropic_schemas as an
from engine.server import openai_schemas as oa
from engine.server.errors import APIError, anthropic_body, openai_body
from engine.server.model_cards import ANTHROPIC_VERSION, model_card, model_list
from engine.server.service import Service, return_hint

log = logging.getLogger("engine.server")
T = TypeVar("T")
# A request's headers, and then its body, must arrive within this many seconds (run.py holds the headers to it):
# a connection that stalls before that is closed.
REQUEST_TIMEOUT_S = 15.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _is_anthropic(request: Request) -> bool:
    """Whether the request is the Anthropic API's: its paths, or another path (the model list) asked by an
    Anthropic client, which sends its API version on every request."""
    path = request.url.path.rstrip("/")
    if path.endswith(("/messages", "/messages/count_tokens")):
        return True
    return ANTHROPIC_VERSION in request.headers and not path.endswith("/chat/completions")


def internal_error(err: Exception) -> APIError:
    """A bug's 500: its message may name the server's files, so the body names only its type."""
    return APIError(500, f"internal error ({type(err).__name__}); the server's log has the details")


def error_response(request: Request, err: APIError) -> JSONResponse:
    body = anthropic_body(err) if _is_anthropic(request) else openai_body(err)
    return JSONResponse(body, status_code=err.status)


async def read_body(request: Request, max_bytes: int, timeout_s: float) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise APIError(413, f"the request body has {declared} bytes; this server takes at most {max_bytes}")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise APIError(413, f"the request body is over {max_bytes} bytes, the most this server takes")
                chunks.append(chunk)
    except TimeoutError:
        raise APIError(
            408, f"the request body did not arrive within {timeout_s:g} s; send it whole and promptly"
        ) from None
    except ClientDisconnect:
        raise ClientGone("while sending its request body") from None
    return b"".join(chunks)


async def until_disconnected(request: Request) -> None:
    """Returns when the client goes away (the body has been read, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it (which aborts its engine request) if the client leaves first."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(until_disconnected(request))
    try:
        await asyncio.wait([task, watch], return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():
            task.cancel()
    if not task.done() or task.cancelled():
        raise ClientGone("before its reply was ready")
    return task.result()


class ClientGone(Exception):
    """The client disconnected before its reply was ready: `str(self)` says when."""


def said_hang_up(request: Request, when: str) -> None:
    """A client that hangs up is no fault of the server: one line in the log, no traceback."""
    client = f"{request.client.host}:{request.client.port}" if request.client else "a client"
    log.info("%s hung up %s (%s %s)", client, when, request.method, request.url.path)


async def told_if_cut(request: Request, events: AsyncIterator[str]) -> AsyncIterator[str]:
    """A stream's events; a stream the client leaves before its end is said in one line."""
    ended = False
    try:
        async for event in events:
            yield event
        ended = True
    finally:
        if not ended:
            said_hang_up(request, "during its stream")


REF = "#/components/schemas/{model}"
BODIES = (oa.ChatCompletionRequest, an.MessagesRequest, an.Conversation)


def _body(model) -> dict:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}},
        }
    }


def _openapi(app: FastAPI) -> dict:
    """FastAPI's document plus the request bodies, which the handlers parse themselves."""
    doc = get_openapi(title=app.title, version="1", routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for model in BODIES:
        schema = model.model_json_schema(ref_template=REF)
        for name, sub in schema.pop("$defs", {}).items():
            assert schemas.setdefault(name, sub) == sub, f"two request schemas are named {name}"
        schemas[model.__name__] = schema
    app.openapi_schema = doc
    return doc


class _App(FastAPI):
    def openapi(self) -> dict[str, Any]:
        return self.openapi_schema or _openapi(self)


def create_app(
    engine: Engine,
    model_names: list[str],
    max_body_bytes: int = 8 << 20,
    body_timeout_s: float = REQUEST_TIMEOUT_S,
) -> FastAPI:
    service = Service(engine, model_names)
    app = _App(title="harness engine", docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    app.state.service = service

    @app.exception_handler(APIError)
    async def api_error(request: Request, err: APIError):
        service.metrics.request("anthropic" if _is_anthropic(request) else "openai", err.status)
        response = error_response(request, err)
        if err.status in (408, 413):  # the rest of the body may still be on its way: start afresh
            response.headers["Connection"] = "close"
        return response

    @app.exception_handler(ClientGone)
    async def client_gone(request: Request, err: ClientGone):
        said_hang_up(request, str(err))
        service.metrics.request("anthropic" if _is_anthropic(request) else "openai", 499)
        return Response(status_code=499)  # nobody reads it; the status is nginx's "client closed request"

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):
        return error_response(request, APIError(err.status_code, str(err.detail)))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception):
        log.exception("unexpected error serving %s", request.url.path)
        return error_response(request, internal_error(err))

    @app.get("/health")
    async def health():
        return {"status": "ok", "models": model_names}

    @app.get("/v1/models")
    async def models(request: Request):
        return model_list(engine, model_names, service.started, _is_anthropic(request))

    @app.get("/v1/models/{name:path}")
    async def model(request: Request, name: str):
        service.check_model(name)
        return model_card(engine, name, service.started, _is_anthropic(request))

    @app.get("/metrics")
    async def metrics():
        # Reading the engine's state takes its lock, which a running step holds: off the loop.
        text = await asyncio.to_thread(service.metrics.render)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.post("/reset_prefix_cache")
    async def reset_prefix_cache():
        # Waits for the running step, like any change to the engine: off the event loop.
        freed = await asyncio.to_thread(engine.reset_prefix_cache)
        return {"freed_blocks": freed}

    async def answer(request: Request, api, kind: str, final: Callable[[ChatReply, str], dict]):
        """One chat request through either API: parse, check, run (streamed or not), count."""
        try:
            body = api.parse(await read_body(request, max_body_bytes, body_timeout_s))
            service.check_model(body.model)
            chat = api.to_chat(body)
            chat.hint = return_hint(request.headers)
            if body.stream:
                events = await api.stream_events(service, chat, body)
                service.metrics.request(kind, 200)
                return StreamingResponse(
                    told_if_cut(request, events), media_type="text/event-stream", headers=SSE_HEADERS
                )
            reply = await unless_disconnected(request, service.complete(chat))
            service.metrics.request(kind, 200)
            return final(reply, body.model)
        except (APIError, ClientGone):
            raise
        except Exception as err:  # a bug, not the client's fault: a counted 500, the connection kept
            log.exception("unexpected error serving %s", request.url.path)
            raise internal_error(err) from None

    @app.post("/v1/chat/completions", openapi_extra=_body(oa.ChatCompletionRequest))
    async def chat_completions(request: Request):
        return await answer(
            request,
            openai_api,
            "openai",
            lambda reply, model: openai_api.completion(reply, model).model_dump(exclude_none=False),
        )

    @app.post("/v1/messages", openapi_extra=_body(an.MessagesRequest))
    async def messages(request: Request):
        return await answer(
            request, anthropic_api, "anthropic", lambda reply, model: anthropic_api.message(reply, model).model_dump()
        )

    @app.post("/v1/messages/count_tokens", openapi_extra=_body(an.Conversation))
    async def count_tokens(request: Request):
        body = anthropic_api.parse_conversation(await read_body(request, max_body_bytes, body_timeout_s))
        service.check_model(body.model)
        count = await service.count_tokens(anthropic_api.conversation(body))
        service.metrics.request("anthropic", 200)
        return an.TokenCount(input_tokens=count).model_dump()

    return app
