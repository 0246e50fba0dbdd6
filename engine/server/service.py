"""What both HTTP APIs share: the engine, the served model names, metrics, and running a chat request.

Handlers translate their API's body into a `ChatRequest`, then either `complete` it or
`stream` it; everything here is awaitable, so one event loop serves many requests
while the engine's own thread batches them.
"""

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from engine.chat import ChatReply, ChatRequest, check_tools, finish, prepare, prompt_ids
from engine.engine import MAX_RETURN_S, Engine
from engine.errors import EngineError
from engine.output import RequestOutput
from engine.sequence import ReturnHint
from engine.server.errors import APIError, from_engine
from engine.server.forward import SESSION_HEADER
from engine.server.metrics import Metrics

CALL_TAG = "<tool_call>"
# With the session header, how many seconds the client may take to come back after this reply
# (a harness sends its tool timeout): the session's prefix is kept ahead of LRU meanwhile.
RETURN_HEADER = "x-harness-return-within"


@dataclass
class Delta:
    """Visible text generated since the previous delta; `output` is set on the last one."""

    text: str
    output: RequestOutput | None = None


class Service:
    def __init__(self, engine: Engine, model_names: list[str]):
        self.engine = engine
        self.model_names = model_names
        self.metrics = Metrics(engine)
        self.started = int(time.time())

    def check_model(self, name: str) -> None:
        if name not in self.model_names:
            raise APIError(
                404,
                f"The model {name!r} does not exist here; this server serves: {', '.join(self.model_names)}.",
                param="model",
                code="model_not_found",
            )

    async def _prepare(self, chat: ChatRequest):
        try:
            # Rendering, tokenizing and grammar compilation are CPU work: keep them off the event loop.
            return await asyncio.to_thread(prepare, self.engine, chat)
        except EngineError as e:
            raise from_engine(e) from None

    async def count_tokens(self, chat: ChatRequest) -> int:
        """The tokens of the prompt `chat` would be sent as: what its reply's usage would count as input."""

        def count() -> int:
            check_tools(chat.tools)
            return len(prompt_ids(self.engine, chat))

        try:
            return await asyncio.to_thread(count)
        except EngineError as e:
            raise from_engine(e) from None

    async def stream(self, chat: ChatRequest) -> tuple[RequestOutput, AsyncIterator[Delta]]:
        """Submit the request; return the state after its first token and the deltas from there.
        Errors in the request raise APIError here, before any byte of a response is sent."""
        ids, params = await self._prepare(chat)
        chunks = self.engine.stream(ids, params, hint=chat.hint)
        try:
            first = await chunks.__anext__()
        except EngineError as e:
            raise from_engine(e) from None
        return first.output, self._deltas(chat, first, chunks)

    async def _deltas(self, chat: ChatRequest, first, chunks) -> AsyncIterator[Delta]:
        hide_calls = bool(chat.tools) and chat.tool_choice != "none"
        text, sent = "", 0
        chunk = first
        while True:
            text += chunk.delta
            end = visible_end(text, sent) if hide_calls else len(text)
            if end > sent:
                yield Delta(text[sent:end])
                sent = end
            if chunk.finished:
                break
            chunk = await chunks.__anext__()
        await chunks.aclose()
        self.metrics.record(chunk.output)
        yield Delta("", chunk.output)

    async def complete(self, chat: ChatRequest) -> ChatReply:
        _, deltas = await self.stream(chat)
        output = None
        async for delta in deltas:
            output = delta.output or output
        return self.finish(chat, output)

    def finish(self, chat: ChatRequest, output: RequestOutput | None) -> ChatReply:
        """The reply for the output a delta stream ended with (None if it ended without one)."""
        if output is None:
            raise APIError(500, "generation ended without a final output")
        if output.finish_reason == "error":
            raise APIError(500, f"generation failed: {output.error}")
        return finish(self.engine, chat, output)


def visible_end(text: str, shown: int = 0) -> int:
    """How much of `text` may be shown while tool calls are hidden: everything before the
    first `<tool_call>`, holding back a tail that may be the start of one. `shown` chars
    are known to hold no tag, so the search starts just before them (a token costs the
    same however long the text)."""
    at = text.find(CALL_TAG, max(0, shown - len(CALL_TAG) + 1))
    if at != -1:
        return at
    for k in range(len(CALL_TAG) - 1, 0, -1):
        if text.endswith(CALL_TAG[:k]):
            return len(text) - k
    return len(text)


def unsent(streamed: str, content: str) -> str:
    """What of a reply's `content` a stream that sent `streamed` (the text before its first `<tool_call>`)
    still owes, so that a streamed reply reads as the whole one does: the text after a call, or a block that
    is not a valid call (cut by max_tokens, say), which stays visible. `content` is stripped; the stream's
    own leading and trailing whitespace is not sent again."""
    head = streamed.strip()
    if not content.startswith(head):
        return ""
    rest = content[len(head) :]
    trailing = streamed[len(streamed.rstrip()) :] if head else ""
    return rest.removeprefix(trailing)


def return_hint(headers) -> ReturnHint | None:
    """The request's `ReturnHint`, from its session and return headers; None without both."""
    session, within = headers.get(SESSION_HEADER), headers.get(RETURN_HEADER)
    if not session or within is None:
        return None
    try:
        seconds = float(within)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= MAX_RETURN_S:
        raise APIError(
            400,
            f"The {RETURN_HEADER} header must be a number of seconds in (0, {MAX_RETURN_S:.0f}], got {within!r}.",
            param=RETURN_HEADER,
        )
    return ReturnHint(session, seconds)
