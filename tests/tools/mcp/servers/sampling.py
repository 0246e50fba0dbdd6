"""An MCP server whose tools ask the client's model for replies (sampling): `python sampling.py [http PORT]`.

Built with the SDK's resolvers: `Sample` is sent as a standalone `sampling/createMessage` request on a 2025-11-25
connection, and as an input request of the call (`input_required`) on a 2026-07-28 one.
"""

import argparse
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.types import CreateMessageResult, SamplingMessage, TextContent

parser = argparse.ArgumentParser()
parser.add_argument("transport", nargs="?", default="stdio")
parser.add_argument("port", nargs="?", type=int, default=0)
opts = parser.parse_args()

server = MCPServer("sampling", log_level="WARNING")


def one_word(text: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"One word for this: {text}"))
    return Sample([message], max_tokens=16, system_prompt="Answer with one word.")


def flood() -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text="spend " * 40_000))
    return Sample([message], max_tokens=100_000)


@server.tool()
def name_it(text: str, reply: Annotated[CreateMessageResult, Resolve(one_word)]) -> str:
    """Names a text in one word, asking the client's model."""
    said = reply.content.text if isinstance(reply.content, TextContent) else f"[{reply.content.type}]"
    return f"the model ({reply.model}) named it: {said}"


@server.tool()
def burn(reply: Annotated[CreateMessageResult, Resolve(flood)]) -> str:
    """Asks the client's model something huge."""
    return "the client answered a 240,000-character request"


if __name__ == "__main__":
    if opts.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=opts.port, streamable_http_path="/mcp")
    else:
        server.run()
