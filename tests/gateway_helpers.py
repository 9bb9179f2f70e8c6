"""Running the gateway for a test: uvicorn on 127.0.0.1 with a free port, in this process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn
from temporalio.client import Client

from durable_teams.gateway import create_app
from durable_teams.gateway.connections import DEFAULT_HEADER_TIMEOUT, server_config
from durable_teams.worker.devserver import free_port

from .waiting import until


@asynccontextmanager
async def running_gateway(client: Client, task_queue: str, *, header_timeout: float = DEFAULT_HEADER_TIMEOUT,
                          max_connections: int = 1000, **options: Any) -> AsyncIterator[str]:
    """The gateway's base URL while it serves (configured as `durable-teams serve` does); stopped afterwards."""
    app = create_app(client, task_queue=task_queue, poll_seconds=0.05, **options)
    port = free_port()
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, header_timeout=header_timeout,
                                          max_connections=max_connections, log_level="warning"))
    serving = asyncio.ensure_future(server.serve())

    async def started() -> bool:  # or it failed
        return server.started or serving.done()
    await until(started, "the gateway started", within=20)
    assert server.started, "the gateway did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 30)


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """(event, data) for each frame of a server-sent event stream, as it arrives."""
    event = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
            yield event or "", data if data == "[DONE]" else json.loads(data)
            event = None


async def read_sse(response: httpx.Response) -> list[tuple[str, Any]]:
    return [frame async for frame in sse_events(response)]
