"""Step latency: from a model call returning a tool call to a gateway client seeing that step.

    python -m bench.step_latency [--turns 3] [--steps 4] [--seconds 0.5]

A gateway client streams each turn (`POST /threads/{id}/turns`, over real HTTP); every step of
the turn is a model call (`--seconds` long) asking for one tool, and the client reads each step
as a `tool_usage` event. The lag is the time from the model call's return to the client reading
its step (one machine, one clock). The gateway reads a turn's steps from the log with the
`log_page` query, which waits while the conversation's workflow task is open: with local model
calls and local tools, a turn's calls all run inside one workflow task, so its steps arrive
together when the turn ends (or at the workflow task's heartbeat). Three contenders, the same
team: model calls and tools both regular; local model calls with a regular tool; both local.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

import httpx
from temporalio.client import Client

from bench import procs
from bench.live_latency import gateway
from durable_teams.live.hub import LocalHub
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.build import build_worker, ensure_search_attributes
from durable_teams.worker.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows.messages import ModelRequest, ModelResponse
from durable_teams.workflows.options import ModelCalls


def look(step: int) -> str:
    """Look one thing up."""
    return f"looked {step}"


class TimedModel(ScriptedModel):
    """The scripted model, each call `seconds` long; remembers when each tool call returned."""

    def __init__(self, steps: int, seconds: float) -> None:
        def script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
            done = sum(m["role"] == "tool" for m in messages[messages_since_user(messages):])
            return call("look", step=done) if done < steps else say("all looked up")

        super().__init__(script)
        self.seconds = seconds
        self.returned: list[float] = []

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        await asyncio.sleep(self.seconds)
        response = await super().complete(req, messages, tools)
        if response.message.tool_calls:
            self.returned.append(time.time())
        return response


def messages_since_user(messages: list[dict[str, Any]]) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "user")


def team(name: str, local_calls: bool, local_tool: bool) -> CompiledTeam:
    agent = Agent("looker", "Look things up.", model="scripted", tools=[tool(look, local=local_tool)])
    return Swarm([agent], name=name, model_calls=ModelCalls(local=local_calls)).compile()


async def measure(client: Client, compiled: CompiledTeam, args: argparse.Namespace) -> list[float]:
    """Seconds from each step's model call returning to the client reading the step."""
    queue, model = f"steps-{uuid.uuid4().hex[:6]}", TimedModel(args.steps, args.seconds)
    seen: list[float] = []
    async with build_worker(client, [compiled], model, task_queue=queue), \
            gateway(client, queue, LocalHub()) as url, httpx.AsyncClient(base_url=url, timeout=120) as http:
        thread = (await http.post("/threads", json={"team": compiled.spec.name})).json()["thread_id"]
        for turn in range(args.turns):
            async with http.stream("POST", f"/threads/{thread}/turns", json={"text": f"turn {turn}"}) as resp:
                event = ""
                async for line in resp.aiter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event == "tool_usage" and json.loads(line[5:])["tool"] == "look":
                        seen.append(time.time())
    assert len(seen) == len(model.returned) == args.turns * args.steps, (len(seen), len(model.returned))
    return [read - returned for read, returned in zip(seen, model.returned, strict=True)]


async def main(args: argparse.Namespace) -> None:
    async with await procs.dev_server() as env:
        await ensure_search_attributes(env.client)
        print(f"\n## Step latency: {args.turns} turns of {args.steps} steps, model calls {args.seconds} s, "
              "model return -> gateway SSE `tool_usage` (2 shared cores)\n")
        print("| model calls | tool | median | max |\n|---|---|---:|---:|")
        for calls, tool_kind, local_calls, local_tool in (
                ("regular", "regular", False, False), ("local", "regular", True, False), ("local", "local", True, True)):
            lags = await measure(env.client, team(f"steps-{calls}-{tool_kind}", local_calls, local_tool), args)
            print(f"| {calls} | {tool_kind} | {statistics.median(lags):.2f} s | {max(lags):.2f} s |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=0.5)
    asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, which the Temporal client's native threads can abort
