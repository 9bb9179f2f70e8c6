"""MCP tool-call latency on the worker: a persistent session against a session per call, over
stdio, with the test server (tests/mcp_server.py) as the MCP server.

    python -m bench.mcp_calls [--calls 200] [--per-call-calls 20] [--concurrency 10]

Each call is the `call_mcp_tool` activity's own work (no Temporal round trip): one call of the
server's `increment` tool. Printed per mode: median and 90th percentile latency in ms, and
calls per second, one call at a time; and, for the persistent session, calls per second with
`--concurrency` calls in flight at once on the one session.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from durable_teams.activities.mcp_calls import MCPActivities
from durable_teams.teams.mcp_servers import MCPStdio
from durable_teams.workflows.mcp_tools import MCPCall

SERVER = str(Path(__file__).resolve().parent.parent / "tests" / "mcp_server.py")
TARGET_MS = 20.0
"""What a call on a persistent session should stay under (median)."""


def request(server: str, n: int) -> MCPCall:
    return MCPCall(server=server, tool="increment", arguments="{}", idempotency_key=f"bench/{n}",
                   agent="bench")


async def one(mcp: MCPActivities, server: str, n: int) -> float:
    start = time.perf_counter()
    result = await mcp.call_mcp_tool(request(server, n))
    if result.is_error:
        raise SystemExit(f"the call failed: {result.content}")
    return time.perf_counter() - start


async def sequential(mcp: MCPActivities, server: str, calls: int) -> list[float]:
    await one(mcp, server, -1)  # the first call opens a persistent session: not counted
    return [await one(mcp, server, n) for n in range(calls)]


async def concurrent(mcp: MCPActivities, server: str, calls: int, concurrency: int) -> float:
    """Calls per second with `concurrency` calls in flight on the one session."""
    pending = iter(range(calls))

    async def lane() -> None:
        for n in pending:
            await one(mcp, server, n)

    start = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return calls / (time.perf_counter() - start)


def line(mode: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[int(len(ms) * 0.9) - 1] if len(ms) >= 10 else ms[-1]
    return (f"{mode:<28} median {statistics.median(ms):8.2f} ms   p90 {p90:8.2f} ms   "
            f"{len(ms) / sum(seconds):8.1f} calls/s   ({len(ms)} calls)")


async def main(args: argparse.Namespace) -> None:
    mcp = MCPActivities({
        "persistent": MCPStdio("persistent", sys.executable, [SERVER]),
        "per_call": MCPStdio("per_call", sys.executable, [SERVER], session="per_call"),
    })
    try:
        kept = await sequential(mcp, "persistent", args.calls)
        print(line("persistent session", kept))
        rate = await concurrent(mcp, "persistent", args.calls, args.concurrency)
        print(f"{'persistent, concurrent':<28} {args.concurrency} in flight: {rate:8.1f} calls/s")
        print(line("session per call", await sequential(mcp, "per_call", args.per_call_calls)))
    finally:
        await mcp.close()
    median = statistics.median(kept) * 1000
    verdict = "under" if median < TARGET_MS else "OVER"
    print(f"persistent median {median:.2f} ms: {verdict} the {TARGET_MS:g} ms target")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls on the persistent session")
    parser.add_argument("--per-call-calls", type=int, default=20,
                        help="calls with a session each (each starts the server)")
    parser.add_argument("--concurrency", type=int, default=10)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
