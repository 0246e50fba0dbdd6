"""The FastAPI app: OpenAI and Anthropic chat endpoints, models, health and metrics.

    app = create_app(Engine(), ["smollm2"])
    uvicorn.run(app, host="127.0.0.1", port=8000)

Request bodies are parsed by hand (pydantic, strict) rather than by FastAPI, so every
malformed request gets a 4xx in the shape of the API it was sent to.
"""

import asyncio
import logging
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException

from engine.engine import Engine
from engine.server import anthropic_api, openai_api
from engine.server import openai_schemas as oa
from engine.server.errors import APIError, anthropic_body, openai_body
from engine.server.service import Service

log = logging.getLogger("engine.server")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _is_anthropic(request: Request) -> bool:
    return request.url.path.rstrip("/").endswith("/messages")


def error_response(request: Request, err: APIError) -> JSONResponse:
    body = anthropic_body(err) if _is_anthropic(request) else openai_body(err)
    return JSONResponse(body, status_code=err.status)


def create_app(engine: Engine, model_names: list[str]) -> FastAPI:
    service = Service(engine, model_names)
    app = FastAPI(title="harness engine", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service

    @app.exception_handler(APIError)
    async def api_error(request: Request, err: APIError):
        service.metrics.request("anthropic" if _is_anthropic(request) else "openai", err.status)
        return error_response(request, err)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):
        return error_response(request, APIError(err.status_code, str(err.detail)))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception):
        log.exception("unexpected error serving %s", request.url.path)
        return error_response(request, APIError(500, f"internal error: {type(err).__name__}: {err}"))

    @app.get("/health")
    async def health():
        return {"status": "ok", "models": model_names}

    @app.get("/v1/models")
    async def models():
        cards = [oa.ModelCard(id=name, created=service.started) for name in model_names]
        return oa.ModelList(data=cards).model_dump()

    @app.get("/metrics")
    async def metrics():
        # Reading the engine's state takes its lock, which a running step holds: off the loop.
        text = await asyncio.to_thread(service.metrics.render)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def answer(request: Request, api, kind: str, final: Callable[[object, str], dict]):
        """One chat request through either API: parse, check, run (streamed or not), count."""
        body = api.parse(await request.body())
        service.check_model(body.model)
        chat = api.to_chat(body)
        if body.stream:
            events = await api.stream_events(service, chat, body)
            service.metrics.request(kind, 200)
            return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
        reply = await service.complete(chat)
        service.metrics.request(kind, 200)
        return final(reply, body.model)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await answer(request, openai_api, "openai",
                            lambda reply, model: openai_api.completion(reply, model).model_dump(exclude_none=False))

    @app.post("/v1/messages")
    async def messages(request: Request):
        return await answer(request, anthropic_api, "anthropic",
                            lambda reply, model: anthropic_api.message(reply, model).model_dump())

    return app
