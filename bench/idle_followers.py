"""What idle followers cost: N `/events` streams of quiet conversations through the gateway.

    python -m bench.idle_followers --followers 200 --seconds 20

A dev server, a worker process (`durable-teams worker`, scripted model) and a gateway process
(`durable-teams serve`); N conversations that wait for a turn, each followed by one SSE
client. Prints the CPU of the gateway, the worker and the Temporal server over `--seconds`,
first with no followers, then with N, as a share of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid

import httpx
import psutil

from bench.procs import ROOT, cpu_of, dev_server, drain, temporal_server
from durable_teams.worker.devserver import free_port
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput


async def started(args: list[str], env: dict[str, str], ready: str) -> asyncio.subprocess.Process:
    """A CLI process, once a line of its output contains `ready`."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "durable_teams", *args, cwd=ROOT,
                                                env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        if not line:
            raise RuntimeError(f"durable-teams {args[0]} ended before it was ready")
        if ready in line:
            drain(proc.stdout)
            return proc


def cpu(processes: dict[str, psutil.Process | None]) -> dict[str, float]:
    return {name: cpu_of(p) for name, p in processes.items()}


async def measure(processes: dict[str, psutil.Process | None], seconds: float) -> dict[str, float]:
    before = cpu(processes)
    await asyncio.sleep(seconds)
    after = cpu(processes)
    return {name: 100 * (after[name] - before[name]) / seconds for name in processes}


async def follow(http: httpx.AsyncClient, thread: str, opened: asyncio.Event, count: list[int]) -> None:
    async with http.stream("GET", f"/threads/{thread}/events") as response:
        assert response.status_code == 200, response.status_code
        count[0] += 1
        opened.set()
        async for _ in response.aiter_lines():
            pass


async def main(n: int, seconds: float) -> None:
    async with await dev_server() as env:
        address = env.client.service_client.config.target_host
        cli_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        cli_env |= {"TEMPORAL_ADDRESS": address, "TEMPORAL_TASK_QUEUE": f"idle-{uuid.uuid4().hex[:6]}"}
        worker = await started(["worker"], cli_env, "olling")
        port = free_port()
        gateway = await started(["serve", "--port", str(port), "--max-followers", str(n + 10),
                                 "--max-requests", str(n + 10)], cli_env, "Uvicorn running")
        processes = {"gateway": psutil.Process(gateway.pid), "worker": psutil.Process(worker.pid),
                     "temporal server": temporal_server()}
        try:
            threads = [f"idle-{uuid.uuid4().hex[:8]}" for _ in range(n)]
            for thread in threads:
                await env.client.start_workflow(
                    TeamWorkflow.run, ConversationInput(team_name="faang", single_turn=False),
                    id=thread, task_queue=cli_env["TEMPORAL_TASK_QUEUE"])
            await asyncio.sleep(2)
            quiet = await measure(processes, seconds)
            limits = httpx.Limits(max_connections=n + 10)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=None, limits=limits) as http:
                opened, count = asyncio.Event(), [0]
                tasks = [asyncio.ensure_future(follow(http, t, opened, count)) for t in threads]
                while count[0] < n:
                    await asyncio.sleep(0.2)
                    if any(t.done() for t in tasks):
                        raise RuntimeError([t.exception() for t in tasks if t.done()][:1])
                await asyncio.sleep(3)  # the first reads of each stream are done
                followed = await measure(processes, seconds)
                for task in tasks:
                    task.cancel()
        finally:
            for proc in (gateway, worker):
                proc.terminate()
                await proc.wait()
    print(f"{n} idle followers of {n} quiet conversations, {seconds:g} s each way "
          "(% of one core; 2 shared cores)")
    print(f"| process | no followers | {n} followers |")
    print("|---|---|---|")
    for name in processes:
        print(f"| {name} | {quiet[name]:.1f} % | {followed[name]:.1f} % |")
    print(f"| all | {sum(quiet.values()):.1f} % | {sum(followed.values()):.1f} % |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--followers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    options = parser.parse_args()
    asyncio.run(main(options.followers, options.seconds))
