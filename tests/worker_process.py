"""A worker in its own process, for tests that kill it: python -m tests.worker_process ADDR QUEUE"""

from __future__ import annotations

import asyncio
import sys

from durable_teams.examples import example_script, example_teams
from durable_teams.runtime import build_worker, connect
from durable_teams.scripted import ScriptedModel


async def main(address: str, task_queue: str) -> None:
    client = await connect(address)
    worker = build_worker(client, example_teams(), ScriptedModel(example_script()), task_queue=task_queue)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
