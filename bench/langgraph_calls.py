"""Temporal frontend calls per run through the LangGraph door, counted by the dev server itself
(the way bench/door_calls.py counts the other doors: its `Frontend`, the workers' polls left out).

    python -m bench.langgraph_calls [--latencies 0 1] [--rounds 1]

For each way a `langgraph-sdk` client runs the FAANG team (10 model calls, 5 tool calls), on a
thread of its own: the calls from the request to its answer. `threads.create + runs.wait` is
what the side-by-side benchmark (bench/langgraph_side_by_side.py) does per run. The floor is
`durable-teams run`'s, the turn's own work. Each row's operations are printed on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph_sdk import get_client

from bench import procs
from bench.door_calls import Frontend, SlowScript, Ways, check, serve_gateway
from durable_teams.examples import faang
from durable_teams.worker.build import build_worker
from durable_teams.worker.devserver import free_port

TEAM = "faang"
INPUT: Any = {"messages": [{"role": "user", "content": faang.QUESTION}]}


def last_content(values: Any) -> object:
    return values["messages"][-1]["content"]


class LangGraphWays:
    """Each way a LangGraph client runs the team: (name, begin (not counted), measured run)."""

    def __init__(self, url: str) -> None:
        self.lg = get_client(url=f"{url}/langgraph", api_key=None)

    async def new_thread(self) -> str:
        return str((await self.lg.threads.create(graph_id=TEAM))["thread_id"])

    async def create_and_wait(self, _: object) -> None:
        thread = await self.new_thread()
        check(last_content(await self.lg.runs.wait(thread, TEAM, input=INPUT)))

    async def wait(self, thread: str) -> None:
        check(last_content(await self.lg.runs.wait(thread, TEAM, input=INPUT)))

    async def stream(self, thread: str, mode: Any) -> None:
        values = None
        async for part in self.lg.runs.stream(thread, TEAM, input=INPUT, stream_mode=mode):
            if part.event == "values":
                values = part.data
        if mode == "values":
            check(last_content(values))

    async def background_join(self, thread: str) -> None:
        run = await self.lg.runs.create(thread, TEAM, input=INPUT)
        check(last_content(await self.lg.runs.join(thread, run["run_id"])))

    def all(self) -> list[tuple[str, Callable[[], Awaitable[Any]] | None, Callable[[Any], Awaitable[Any]]]]:
        return [
            ("`threads.create` + `runs.wait` (the side-by-side's run)", None, self.create_and_wait),
            ("`runs.wait`", self.new_thread, self.wait),
            ("`runs.stream` (values)", self.new_thread, lambda t: self.stream(t, "values")),
            ("`runs.stream` (updates, messages-tuple)", self.new_thread,
             lambda t: self.stream(t, ["updates", "messages-tuple"])),
            ("`runs.create` + `runs.join`", self.new_thread, self.background_join),
        ]


async def one_latency(client: Any, frontend: Frontend, latency: float, rounds: int) -> None:
    queue = f"lg-{uuid.uuid4().hex[:6]}"
    async with build_worker(client, [faang.build().compile()], SlowScript(latency), task_queue=queue):
        server, serving, url = await serve_gateway(client, queue)
        ways = LangGraphWays(url)
        floor_way = Ways(client, queue, url)
        try:
            print(f"\nmodel latency {latency:g} s ({rounds} round(s); calls per run, the median):\n")
            print("| way in | calls per run | `QueryWorkflow` | `PollWorkflowExecutionHistory` | x the floor |")
            print("|---|---:|---:|---:|---:|")
            rows: list[tuple[str, Callable[[], Awaitable[Any]] | None, Callable[[Any], Awaitable[Any]]]] = [
                ("`durable-teams run` (the floor)", None, lambda _: floor_way.run()), *ways.all()]
            floor = None
            for name, begin, run in rows:
                tallies = []
                for _ in range(rounds):
                    state = await begin() if begin else None
                    before = await frontend.settled()
                    await run(state)
                    tallies.append(await frontend.settled() - before)
                tally = sorted(tallies, key=lambda t: t.total())[len(tallies) // 2]
                total = tally.total()
                floor = floor or total
                print(f"| {name} | {total} | {tally['QueryWorkflow']} | {tally['PollWorkflowExecutionHistory']} "
                      f"| {total / floor:.2f} |", flush=True)
                print(f"({name}: {', '.join(f'{op} {n}' for op, n in tally.most_common())})",
                      file=sys.stderr, flush=True)
        finally:
            await floor_way.http.aclose()
            server.should_exit = True
            await serving


async def main(latencies: list[float], rounds: int) -> None:
    port = free_port()
    async with await procs.dev_server(extra_args=["--metrics-port", str(port)]) as env:
        frontend = Frontend(port)
        print("\n## Temporal frontend calls per FAANG run through the LangGraph door\n")
        for latency in latencies:
            await one_latency(env.client, frontend, latency, rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 1.0],
                        help="the scripted model's latency per call, seconds (default 0 1)")
    parser.add_argument("--rounds", type=int, default=1, help="runs measured per way (the median is shown)")
    args = parser.parse_args()
    asyncio.run(main(args.latencies, args.rounds))
