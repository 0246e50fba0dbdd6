"""Reading a stdio server's output a whole message at a time: nothing lost, nothing reordered, floods bounded."""

from __future__ import annotations

import json

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.mcp import lines
from tools.mcp.lines import TOO_LONG, LineStream


def read_all(chunks: list[bytes]) -> list[str]:
    """What LineStream hands the SDK, piece by piece, for bytes arriving in these chunks."""

    async def main() -> list[str]:
        send, receive = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
        for chunk in chunks:
            send.send_nowait(chunk)
        send.close()
        return [text async for text in LineStream(receive)]

    return anyio.run(main)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1), max_size=8),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_whole_lines_come_through_unchanged_however_the_bytes_are_cut(messages, cuts):
    data = "".join(m + "\n" for m in messages).encode()
    out = read_all(split(data, cuts))
    assert "".join(out) == data.decode()
    assert all(text.endswith("\n") for text in out)  # whole lines only: the SDK's own buffer stays empty


def test_a_too_long_answer_becomes_an_error_to_the_same_request_and_the_rest_goes_on(monkeypatch):
    monkeypatch.setattr(lines, "MESSAGE_CHARS", 1000)
    huge = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": "x" * 5000}})
    nameless = json.dumps({"jsonrpc": "2.0", "method": "notify", "params": {"text": "y" * 5000}})
    after = json.dumps({"jsonrpc": "2.0", "id": 8, "result": {}})
    data = f"{huge}\n{nameless}\n{after}\n".encode()
    [error, kept] = "".join(read_all(split(data, list(range(0, len(data), 333))))).splitlines()
    answer = json.loads(error)
    assert answer["id"] == 7 and answer["error"]["code"] == TOO_LONG
    assert "its answer had 5,0" in answer["error"]["message"] and "more than the 1,000" in answer["error"]["message"]
    assert kept == after  # the nameless flood is dropped; the next message is whole
