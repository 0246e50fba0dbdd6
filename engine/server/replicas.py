"""`harness serve --replicas N --router R`: N engines as one Ray Serve deployment behind one URL.

    Front (ingress, one)  ──handle call, routed by R (engine/server/routing.py)──▶  EngineReplica × N

Each `EngineReplica` holds one engine and the same FastAPI app `harness serve` runs (create_app),
so both APIs, streaming and errors answer as with one engine. Ray places replicas by resources:
`num_cpus` threads each on CPU, one GPU each with device cuda. The front door reads a request's
body (Serve's proxy shows routers only headers), adds the routing keys and forwards it; /metrics
and /reset_prefix_cache go to every replica. A replica that dies is replaced by Serve; a request
in flight on it gets a 503, which clients (the harness's retry, the OpenAI and Anthropic SDKs)
treat as transient and retry.
"""

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import ray
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from ray import serve
from ray.exceptions import RayActorError
from ray.serve.config import RequestRouterConfig

from engine.chat import prompt_ids
from engine.config import EngineConfig
from engine.server import anthropic_api, openai_api
from engine.server.app import create_app, error_response
from engine.server.errors import APIError
from engine.server.forward import SESSION_HEADER, Forwarded, Start, block_hashes, call_asgi
from engine.server.merged_metrics import merge
from engine.server.routing import ROUTERS

log = logging.getLogger("engine.server.replicas")
DEPLOYMENT = "EngineReplica"
FAN_OUT_TIMEOUT_S = 10.0  # a replica still starting (or just dead) is left out
# Exceptions a call meets when its replica died or became unreachable under it.
REPLICA_GONE: tuple[type[BaseException], ...] = (RayActorError, ray.exceptions.ActorUnavailableError)


class EngineReplica:
    def __init__(self, model: str | None, config: EngineConfig, names: list[str]):
        from engine.engine import Engine

        self.engine = Engine(model, config)
        self.app = create_app(self.engine, names)

    async def call(self, request: Forwarded):
        async for item in call_asgi(self.app, request):
            yield item

    def __del__(self):
        self.engine.shutdown()


front = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@serve.ingress(front)
class Front:
    def __init__(self, replicas, model: str | None, block_size: int, router: str):
        self.replicas = replicas
        self.block_size = block_size
        self.tokenizer = None
        if router == "prefix":  # only the prefix router reads tokens: load the tokenizer for it alone
            from engine.tokenizer import Tokenizer
            from engine.weights import default_model_path, load_checkpoint

            self.tokenizer = Tokenizer.from_checkpoint(load_checkpoint(model or default_model_path()))

    def _hashes(self, path: str, body: bytes) -> list[int]:
        if self.tokenizer is None:
            return []
        api = anthropic_api if path.rstrip("/").endswith("messages") else openai_api
        try:
            chat = api.to_chat(api.parse(body))
            return block_hashes(prompt_ids(self.tokenizer, chat), self.block_size)
        except Exception:  # a bad request routes anywhere; its replica answers it with the right error
            return []

    def _stream(self, forwarded: Forwarded):
        return self.replicas.options(stream=True).call.remote(forwarded)

    async def _each_replica(self, method: str, path: str) -> dict[str, bytes]:
        """`method path` on every live replica: its response body by replica id."""
        prefix = f"SERVE_REPLICA::{serve.get_replica_context().app_name}#{DEPLOYMENT}#"
        actors = await asyncio.to_thread(ray.util.list_named_actors, all_namespaces=True)
        live = [a["name"] for a in actors if a["name"].startswith(prefix)]

        async def one(replica: str) -> tuple[str, bytes]:
            chunks = []
            async for item in self._stream(Forwarded(method, path, [], replica=replica)):
                if isinstance(item, bytes):
                    chunks.append(item)
            return replica, b"".join(chunks)

        # One at a time: calls made while serving one request share its request id, and Serve's router
        # matches a chosen replica to its pending request by that id.
        pages = {}
        for replica in live:
            with contextlib.suppress(TimeoutError, *REPLICA_GONE):
                name, page = await asyncio.wait_for(one(replica), FAN_OUT_TIMEOUT_S)
                pages[name] = page
        return pages

    @front.get("/metrics")
    async def metrics(self):
        pages = await self._each_replica("GET", "/metrics")
        text = merge({replica.split("#")[-1]: body.decode() for replica, body in pages.items()})
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    @front.post("/reset_prefix_cache")
    async def reset_prefix_cache(self):
        pages = await self._each_replica("POST", "/reset_prefix_cache")
        return {"freed_blocks": sum(json.loads(body)["freed_blocks"] for body in pages.values())}

    @front.api_route("/{path:path}", methods=["GET", "POST"])
    async def forward(self, request: Request, path: str):
        body = await request.body()
        forwarded = Forwarded(
            request.method,
            path,
            list(request.headers.items()),
            body,
            request.url.query,
            await asyncio.to_thread(self._hashes, path, body),
            request.headers.get(SESSION_HEADER),
        )
        items = self._stream(forwarded)
        try:
            start = await items.__anext__()
        except REPLICA_GONE as e:
            log.warning("replica lost under a request to /%s: %s", path, type(e).__name__)
            return error_response(request, APIError(503, "the replica serving this request died; retry it"))
        assert isinstance(start, Start)
        headers = {k: v for k, v in start.headers if k.lower() not in ("content-length", "transfer-encoding")}
        # A replica dying mid-stream cuts the stream short: the client sees a broken connection and retries.
        return StreamingResponse(items, status_code=start.status, headers=headers)


def build(
    replicas: int, router: str, model: str | None, config: EngineConfig, names: list[str], imbalance: int | None = None
):
    """The Serve application: N engine replicas behind the front door; `imbalance` None: the routers' own (4)."""
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; choose one of {', '.join(ROUTERS)}")
    gpu = config.device.startswith("cuda")
    if gpu:  # Ray gives each replica its own GPU and hides the others: cuda:N would name a hidden one
        config = dataclasses.replace(config, device="cuda")
    kwargs = {"imbalance": imbalance} if router in ("prefix", "session") and imbalance is not None else {}
    engine_replica = serve.deployment(
        name=DEPLOYMENT,
        num_replicas=replicas,
        max_ongoing_requests=config.max_num_seqs,
        ray_actor_options={"num_cpus": config.num_threads or 1, "num_gpus": 1 if gpu else 0},
        request_router_config=RequestRouterConfig(
            # By import path, which every process resolves to the routers' module.
            request_router_class=f"{ROUTERS[router].__module__}.{ROUTERS[router].__name__}",  # type: ignore[arg-type]
            request_router_kwargs=kwargs,
        ),
    )(EngineReplica).bind(model, config, names)
    front_door = serve.deployment(
        name="Front", num_replicas=1, max_ongoing_requests=1000, ray_actor_options={"num_cpus": 0}
    )(Front)
    return front_door.bind(engine_replica, model, config.block_size, router)


@contextlib.contextmanager
def running(
    replicas: int,
    router: str,
    model: str | Path | None = None,
    config: EngineConfig | None = None,
    names: list[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    num_cpus: int | None = None,
    imbalance: int | None = None,
) -> Iterator[str]:
    """Start Ray (or join RAY_ADDRESS's cluster), serve the replicas; yields the base URL (no /v1)."""
    from engine.server.run import DEFAULT_NAME

    config = config or EngineConfig()
    model_arg = str(model) if model else None
    names = names or [Path(model).stem if model else DEFAULT_NAME]
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": host, "port": port})
        serve.run(build(replicas, router, model_arg, config, names, imbalance), name="harness", route_prefix="/")
        yield f"http://{host}:{port}"
    finally:
        serve.shutdown()
        if started_ray:
            ray.shutdown()


def serve_replicas(
    replicas: int, router: str, model, host: str, port: int, config: EngineConfig, name, imbalance: int | None = None
):
    """Serve in the foreground until interrupted."""
    import threading

    names = [name] if name else None
    with running(replicas, router, model, config, names, host, port, imbalance=imbalance):
        log.warning("serving %d replicas (router %s) on http://%s:%d", replicas, router, host, port)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
