"""How long MCP discovery takes: a stdio server with 200 tools served in pages, until every tool is a harness tool.

"cold" is what a run waits for before its first step: spawning the server
process (mostly the server's own Python imports), the protocol handshake, paging
through `tools/list`, and adapting each tool (names, effects, cleaned and fenced
descriptions, schemas). "warm" lists and adapts again on the open connection, as
after a change notification. The goal is under 2 seconds, cold, for 200 tools.
The load average is printed because other work on the machine slows the spawn.

    .venv/bin/python benchmarks/bench_mcp.py [--tools 200] [--page 50] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.mcp_settings import McpServer  # noqa: E402
from tools.base import Registry  # noqa: E402
from tools.mcp import with_mcp  # noqa: E402

SERVER = ROOT / "tests" / "tools" / "mcp" / "servers" / "paged.py"
GOAL_S = 2.0


def discover(count: int, page: int) -> tuple[float, float]:
    """(cold seconds, warm seconds) for one server of `count` tools."""
    server = McpServer(name="paged", command=sys.executable, args=[str(SERVER), str(count), str(page)])
    start = time.perf_counter()
    with with_mcp([server], Registry(), max_tools=count) as registry:
        cold = time.perf_counter() - start
        if len(registry) != count:
            raise SystemExit(f"discovered {len(registry)} tools, expected {count}")
        start = time.perf_counter()
        registry.mcp.refresh("paged")
        registry.sync()
        warm = time.perf_counter() - start
    return cold, warm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=200)
    ap.add_argument("--page", type=int, default=50, help="tools per tools/list page")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    discover(3, 3)  # the parent's first import of the SDK is paid once per process, not per server
    runs = [discover(args.tools, args.page) for _ in range(args.repeat)]
    cold, warm = [r[0] for r in runs], [r[1] for r in runs]
    pages = -(-args.tools // args.page)
    print(
        f"MCP discovery, {args.tools} tools in {pages} pages over stdio, {args.repeat} runs, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"  cold (spawn, handshake, list, adapt): median {statistics.median(cold):.2f} s, "
        f"min {min(cold):.2f} s, max {max(cold):.2f} s; goal < {GOAL_S:g} s "
        f"{'met' if statistics.median(cold) < GOAL_S else 'MISSED'} (median)"
    )
    print(
        f"  warm (list and adapt again):          median {statistics.median(warm) * 1000:.0f} ms, "
        f"max {max(warm) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
