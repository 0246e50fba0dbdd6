"""A stdio MCP server's output, one whole message at a time, in linear time and bounded memory.

The SDK's stdio client reads 64 KiB chunks, joins each to the unfinished line
before it and splits the whole again: quadratic in a message's length. A 50 MiB
answer took over a minute of one core, on the thread every MCP server of the run
shares. `LineStream` hands the client only whole lines, so its own buffer stays
empty, and answers a message longer than MESSAGE_CHARS with an error to the same
request instead of holding it in memory. `use_line_stream()` makes the SDK's
stdio client read through it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from anyio.streams.text import TextReceiveStream

MESSAGE_CHARS = 64 * 1024 * 1024  # one JSON-RPC message; results are cut to far less before the model sees them
TOO_LONG = -32099  # the error code of the answer that replaces a too-long one (JSON-RPC's implementation range)
_HEAD_CHARS = 200  # where a message's id is, in what the SDK writes: {"jsonrpc":"2.0","id":7,...
_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


@dataclass(eq=False)
class LineStream(TextReceiveStream):
    _parts: list[str] = field(init=False, default_factory=list)  # the unfinished line
    _size: int = field(init=False, default=0)  # its length, counting what was dropped

    async def receive(self) -> str:
        while True:
            *ends, start = (await super().receive()).split("\n")
            lines = []
            for end in ends:
                self._add(end)
                line = self._take()
                if line is not None:
                    lines.append(line + "\n")
            self._add(start)
            if lines:
                return "".join(lines)

    def _add(self, piece: str) -> None:
        size = self._size + len(piece)
        if size <= MESSAGE_CHARS:
            self._parts.append(piece)
        elif self._size <= MESSAGE_CHARS:  # just went over: keep only the head, where the id is
            self._parts = ["".join([*self._parts, piece[:_HEAD_CHARS]])[:_HEAD_CHARS]]
        self._size = size

    def _take(self) -> str | None:
        line, size = "".join(self._parts), self._size
        self._parts, self._size = [], 0
        return line if size <= MESSAGE_CHARS else too_long(line, size)


def too_long(line: str, size: int) -> str | None:
    """An error answer to the request a too-long message answers; None if it names no request."""
    found = _ID.search(line[:_HEAD_CHARS])
    if found is None:
        return None
    message = (
        f"its answer had {size:,} characters, more than the {MESSAGE_CHARS:,} one message may have, so it was "
        "dropped; the call itself ran"
    )
    return json.dumps(
        {"jsonrpc": "2.0", "id": json.loads(found.group(1)), "error": {"code": TOO_LONG, "message": message}}
    )


def use_line_stream() -> None:
    """Make the SDK's stdio client read through LineStream (it names its text stream at module level)."""
    import mcp.client.stdio

    # The SDK offers no hook for its stream class, so its module's name for it is replaced; setattr
    # because a plain assignment to a class name is not something a type checker accepts.
    setattr(mcp.client.stdio, "TextReceiveStream", LineStream)  # noqa: B010
