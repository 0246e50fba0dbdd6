"""An MCP server with one idempotent write tool, for crash tests: `python counter.py FILE [--slow S]`.

`put(index, value)` sets one entry of the JSON object in FILE; `read()` lists the values in index order, and so
does the resource `counter://values`, whose subscribers each put notifies; the prompt `count(upto)` asks for the
counter to be written up to `upto`.
Putting the same entry twice changes nothing, so a write cut short by a crash can simply run again.
A server orphaned by a killed harness may still finish its call while the resumed run's server
writes: each put holds an exclusive lock on FILE.lock and replaces FILE atomically, so neither
write is lost. `--slow S` sleeps S seconds before and after the write, so kills land inside it.
"""

import argparse
import fcntl
import json
import os
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("file", type=Path)
parser.add_argument("--slow", type=float, default=0.0)
opts = parser.parse_args()

server = MCPServer("counter", log_level="WARNING")


def entries() -> dict[str, int]:
    return json.loads(opts.file.read_text()) if opts.file.exists() else {}


VALUES = "counter://values"


@server.tool()
async def put(index: int, value: int, ctx: Context) -> str:
    """Set entry `index` of the counter to `value`."""
    await anyio.sleep(opts.slow)
    with open(f"{opts.file}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = entries() | {str(index): value}
        tmp = opts.file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, opts.file)
    await ctx.notify_resource_updated(VALUES)  # before the call's answer: its follower hears of it first
    await anyio.sleep(opts.slow)
    return f"entry {index} is {value}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read() -> str:
    """The counter's values in index order."""
    data = entries()
    return " ".join(str(data[k]) for k in sorted(data, key=int)) or "empty"


@server.resource(VALUES)
def values() -> str:
    """The counter's values in index order."""
    return read()


@server.prompt()
def count(upto: str) -> str:
    """A task: write the counter up to `upto`."""
    return f"Write 1, 2, ... {upto} to the counter, read it back, then submit."


if __name__ == "__main__":
    server.run()
