"""The benchmark's worker in a process of its own, so its RSS and CPU are measured apart from the
benchmark's client (which holds the histories it fetches).

    python -m bench.worker_proc <server address> <task queue>

Serves the benchmark teams with the zero-latency scripted model: the `asker` agent asks a person
once, then thanks; the `reader` agent calls `fetch` until its N-th model call, where N is read
from the workflow id (`<prefix>-<N>-<suffix>`). Prints "ready" once polling; stops on SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from bench.run import PARK_TEAM, TEAM
from durable_teams.runtime import build_worker, connect
from durable_teams.scripted import ScriptedModel, Step, call, say
from durable_teams.workflows.messages import ModelRequest


def step(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
    if req.agent == "asker":
        return call("ask_human", question="Go ahead?") if req.agent_call_index == 0 else say("thanks")
    n = int(req.workflow_id.split("-")[1])
    return call("fetch", i=req.agent_call_index) if req.agent_call_index < n - 1 else say("done")


class ForgetfulScript(ScriptedModel):
    """The scripted model without its record of requests (it would hold every view)."""

    async def complete(self, req, messages, tools):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN201
        response = await super().complete(req, messages, tools)
        self.requests.clear()
        return response


async def main(address: str, task_queue: str) -> None:
    client = await connect(address)
    worker = build_worker(client, [TEAM, PARK_TEAM], ForgetfulScript(step), task_queue=task_queue,
                          max_cached_workflows=2000)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with worker:
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
