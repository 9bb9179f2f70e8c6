"""The system under test for the A2A TCK (a2aproject/a2a-tck): a Temporal dev server, a worker
serving one echo team whose scripted model answers `--model-seconds` late, and a gateway
serving it as an A2A agent, all in this process.

    python -m bench.a2a_tck_sut --port 9999 [--model-seconds 4] [--wait-seconds 1]

The TCK's tests of ListTasks (and of cancel) want a task that stays `working` for a few
seconds after a blocking `SendMessage`, and each next task of the same context working
within 5 s (a thread takes one turn at a time): the model's 4 s keep a task working, and
`--wait-seconds` is how long `SendMessage` waits for the turn before it returns the task as
it is (the gateway's default is 300 s). Run the TCK against the team's endpoint:
`run_tck.py --sut-url http://127.0.0.1:9999/a2a/tck --category mandatory`. Prints "ready" once it serves; stops on Ctrl-C or SIGTERM (its dev server too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import shutil
import signal
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import uvicorn
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_teams.gateway import create_app
from durable_teams.gateway.core.connections import server_config
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.doors.a2a import routes as a2a_http
from durable_teams.gateway.doors.a2a.door import A2ADoor
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker
from durable_teams.worker.scripted import ScriptedModel, say
from durable_teams.workflows.human import AWAITING_HUMAN
from durable_teams.workflows.labels import TASK, TEAM
from durable_teams.workflows.messages import Message, ModelRequest, ModelResponse

TCK_TEAM = Swarm([Agent("echo", "Repeats what it is told.")], name="tck").compile()


def echo(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    return say(f"heard: {messages[-1]['content']}")


class SlowEcho(ScriptedModel):
    def __init__(self, seconds: float) -> None:
        super().__init__(echo)
        self.seconds = seconds

    async def complete(self, req: ModelRequest, messages: Any, tools: Any) -> ModelResponse:
        await asyncio.sleep(self.seconds)
        return await super().complete(req, messages, tools)


class Server(uvicorn.Server):
    """uvicorn's server, stopping on SIGTERM or Ctrl-C without raising the signal again once
    stopped, so the dev server is stopped too (uvicorn re-raises it, which ends the process first)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        yield


async def serve(port: int, model_seconds: float, wait_seconds: float) -> None:
    temporal = shutil.which("temporal", path=sys.exec_prefix + "/bin") or shutil.which("temporal")
    async with await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter, dev_server_existing_path=temporal,
            search_attributes=[AWAITING_HUMAN, TEAM, TASK]) as env:
        queue = f"tck-{uuid.uuid4().hex[:8]}"
        a2a_http.A2ADoor = functools.partial(A2ADoor, wait_seconds=wait_seconds)  # type: ignore[misc,assignment]
        app = create_app(env.client, task_queue=queue, cards=[card_of(TCK_TEAM.spec)], teams=["tck"])
        async with build_worker(env.client, [TCK_TEAM], SlowEcho(model_seconds), task_queue=queue):
            server = Server(server_config(app, "127.0.0.1", port, log_level="warning"))
            print("ready", flush=True)
            await server.serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--model-seconds", type=float, default=4.0)
    parser.add_argument("--wait-seconds", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.model_seconds, args.wait_seconds))


if __name__ == "__main__":
    main()
