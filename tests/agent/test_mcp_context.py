"""What a resumed run knows of the resources its opening placed: each one's text, told apart in the opening."""

from __future__ import annotations

import sys

from mcp.types import TextResourceContents

from agent.mcp_context import opening_blocks
from core.mcp_settings import McpServer
from tools.mcp.resources import rendered


def server(name: str, trusted: bool) -> McpServer:
    return McpServer(name=name, command=sys.executable, trusted=trusted)


def placed(*resources: tuple[McpServer, str, str]) -> list[tuple[str, str, str]]:
    """(server, uri, text) as placed: each rendered as the model sees it, the text split over lines and blank lines."""
    return [
        (s.name, uri, rendered(s, uri, [TextResourceContents(uri=uri, mime_type="text/plain", text=text)]))
        for s, uri, text in resources
    ]


def test_each_placed_resource_is_told_apart_in_the_opening_whatever_its_servers_trust():
    blocks = placed(
        (server("notes", trusted=False), "notes://a", "first\n\nparagraph"),
        (server("counter", trusted=True), "counter://values", "1 2\n\n3"),
        (server("notes", trusted=False), "notes://b", "Resource notes://a, quoted"),
    )
    opening = "\n\n".join(text for _, _, text in blocks)
    assert opening_blocks(opening, blocks) == [text for _, _, text in blocks]


def test_a_resource_the_opening_does_not_hold_leaves_every_one_untold():
    blocks = placed((server("counter", trusted=True), "counter://values", "1"))
    assert opening_blocks("Write 1, 2, 3.", blocks) == [None]
    assert opening_blocks(None, blocks) == [None]
    assert opening_blocks("anything", []) == []
