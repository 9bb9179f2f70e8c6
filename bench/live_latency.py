"""Live-token latency: from the model endpoint sending a delta to a gateway client reading it.

    python -m bench.live_latency [--answers 10] [--deltas 40] [--gap 0.02]

A streaming OpenAI-compatible endpoint (here) writes each delta with the wall-clock time it sent
it; a client of the gateway's native SSE stream (`POST /threads/{id}/turns`, over real HTTP)
reads each one and takes the difference (one machine, one clock). Two deployments:

- one process: worker, gateway and reader share this process's hub (durable_teams/live/hub.py);
- across processes: the worker in its own process (bench/worker_proc.py), deltas through a
  `redis-server` (from PATH) to the gateway (durable_teams/live/redis_hub.py).

Prints the median, 95th percentile and maximum per deployment, and how many Redis PUBLISH
commands an answer took (deltas are coalesced, not sent one by one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from temporalio.client import Client

from bench import procs
from durable_teams.activities.model import OpenAIBackend
from durable_teams.gateway import create_app
from durable_teams.live.hub import LiveHub, LocalHub
from durable_teams.live.redis_hub import RedisHub
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.build import build_worker, ensure_search_attributes
from durable_teams.worker.devserver import free_port

WRITER = Swarm([Agent("writer", "Write.", model="live-bench")], name="writer").compile()


async def streaming_endpoint(deltas: int, gap: float) -> tuple[asyncio.Server, str]:
    """An endpoint streaming `deltas` pieces `gap` seconds apart, each the time it was sent."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        for _ in range(deltas):
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": f"{time.time():.6f} "}}]}
            writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await writer.drain()
            await asyncio.sleep(gap)
        end = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        writer.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


@asynccontextmanager
async def gateway(client: Client, queue: str, hub: LiveHub) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(client, task_queue=queue, poll_seconds=0.05, live_hub=hub),
                                           host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.ensure_future(server.serve())
    for _ in range(2000):  # uvicorn says nothing when it is up: look (20 s at most)
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def measure(url: str, answers: int) -> list[float]:
    """Seconds from sent to read, for every delta of `answers` turns on one thread."""
    lags: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        thread = (await http.post("/threads", json={"team": "writer"})).json()["thread_id"]
        for i in range(answers):
            async with http.stream("POST", f"/threads/{thread}/turns", json={"text": f"go {i}"}) as resp:
                event = ""
                async for line in resp.aiter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event == "ai_message_delta":
                        now = time.time()
                        lags += [now - float(t) for t in json.loads(line[5:])["text"].split()]
    return lags


def summary(name: str, lags: list[float], extra: str = "") -> None:
    ms = sorted(1000 * x for x in lags)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    print(f"{name:<34} {len(ms):>6} deltas   median {statistics.median(ms):6.1f} ms   "
          f"p95 {p95:6.1f} ms   max {ms[-1]:6.1f} ms{extra}")


async def one_process(client: Client, model_url: str, answers: int) -> None:
    queue, hub = f"live-{uuid.uuid4().hex[:6]}", LocalHub()
    async with build_worker(client, [WRITER], OpenAIBackend(base_url=model_url, stream=True),
                            task_queue=queue, live_hub=hub), gateway(client, queue, hub) as url:
        summary("one process (in-process hub)", await measure(url, answers))


async def across_processes(client: Client, address: str, model_url: str, answers: int) -> None:
    binary = shutil.which("redis-server")
    if binary is None:
        print("across processes: skipped (no redis-server on PATH; apt-get install redis-server)")
        return
    port = free_port()
    redis = await asyncio.create_subprocess_exec(binary, "--port", str(port), "--save", "", "--appendonly", "no",
                                                 stdout=asyncio.subprocess.DEVNULL)
    redis_url = f"redis://127.0.0.1:{port}/0"
    queue = f"live-{uuid.uuid4().hex[:6]}"
    worker = None
    try:
        hub = RedisHub(redis_url)
        for _ in range(500):
            try:
                await hub.redis.ping()
                break
            except Exception:  # noqa: BLE001 - not listening yet
                await asyncio.sleep(0.02)
        worker = await procs.Proc("-m", "bench.live_latency", "--serve", address, queue, model_url,
                                  env={"DURABLE_TEAMS_LIVE_URL": redis_url}).start()
        async with gateway(client, queue, hub) as url:
            lags = await measure(url, answers)
        stats = await hub.redis.info("commandstats")
        publishes = int(stats.get("cmdstat_publish", {}).get("calls", 0))
        summary("across processes (redis pub/sub)", lags, f"   {publishes / answers:.1f} PUBLISH per answer")
    finally:
        if worker is not None:
            await worker.stop()
        redis.terminate()
        await redis.wait()


async def serve(address: str, queue: str, model_url: str) -> None:
    """The worker process of the across-processes run (its hub: DURABLE_TEAMS_LIVE_URL's)."""
    from durable_teams.client.connection import connect

    client = await connect(address)
    async with build_worker(client, [WRITER], OpenAIBackend(base_url=model_url, stream=True), task_queue=queue):
        print("ready", flush=True)
        await asyncio.Event().wait()  # until the benchmark stops this process


async def main(args: argparse.Namespace) -> None:
    if args.serve:
        await serve(*args.serve)
        return
    endpoint, model_url = await streaming_endpoint(args.deltas, args.gap)
    async with await procs.dev_server() as env:
        await ensure_search_attributes(env.client)
        print(f"\n## Live-token latency: {args.answers} answers of {args.deltas} deltas, {1000 * args.gap:.0f} ms apart, "
              "endpoint -> worker -> gateway SSE -> reader (2 shared cores)\n")
        await one_process(env.client, model_url, args.answers)
        await across_processes(env.client, env.client.service_client.config.target_host, model_url, args.answers)
    endpoint.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--deltas", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.02)
    parser.add_argument("--serve", nargs=3, metavar=("ADDRESS", "QUEUE", "MODEL_URL"), help=argparse.SUPPRESS)
    asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, which the Temporal client's native threads can abort
