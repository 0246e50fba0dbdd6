"""One HTTP request carried from the replicas' front door to an engine replica, and played there
against the engine's own FastAPI app, so that a replica answers exactly as `harness serve` does.

Serve's HTTP proxy shows a router only the request's headers, never its body, so the front door
reads the body, computes what the routers need (the prompt's block hashes, the session key) and
sends it all as the first argument of a replica call (engine/server/routing.py reads it there).
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

SESSION_HEADER = "x-harness-session"
# The routers by name (engine/server/routing.py), here where Ray is not imported: a caller checks a name without Ray.
ROUTER_NAMES = ("round_robin", "least_loaded", "prefix", "session")


@dataclass
class Forwarded:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    query: str = ""
    block_hashes: list[int] = field(default_factory=list)
    session: str | None = None
    replica: str | None = None  # pin to this replica (its full id): /metrics and /reset_prefix_cache


@dataclass
class Start:
    """The response's status and headers, the first item a replica yields; body chunks follow."""

    status: int
    headers: list[tuple[str, str]]


def block_hashes(ids: list[int], block_size: int) -> list[int]:
    """Chained hashes of the full blocks of `ids`: block i's hash stands for the whole prefix up to
    its end, as a radix cache's block does, so equal hashes mean an equal prefix."""
    hashes, prev = [], 0
    for end in range(block_size, len(ids) + 1, block_size):
        prev = hash((prev, tuple(ids[end - block_size : end])))
        hashes.append(prev)
    return hashes


async def call_asgi(app, request: Forwarded) -> AsyncIterator[Start | bytes]:
    """Run `request` through the ASGI `app`; yield its Start, then its body chunks as they come.
    Closing the generator early tells the app its client went away (which aborts the engine request)."""
    messages: asyncio.Queue = asyncio.Queue()
    gone = asyncio.Event()
    body_sent = False

    async def receive() -> dict:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": "/" + request.path.lstrip("/"),
        "raw_path": ("/" + request.path.lstrip("/")).encode(),
        "query_string": request.query.encode(),
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in request.headers],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    task = asyncio.ensure_future(app(scope, receive, messages.put))
    task.add_done_callback(lambda _: messages.put_nowait(None))
    try:
        while (message := await messages.get()) is not None:
            if message["type"] == "http.response.start":
                yield Start(message["status"], [(k.decode(), v.decode()) for k, v in message.get("headers", [])])
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body"):
                    break
        if task.done() and (error := task.exception()) is not None:
            raise error
    finally:
        gone.set()
        if not task.done():
            await asyncio.wait([task], timeout=10)
