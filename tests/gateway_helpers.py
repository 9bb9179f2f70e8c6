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
from durable_teams.gateway.core.connections import DEFAULT_HEADER_TIMEOUT, server_config
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


def streamed_content(response: httpx.Response) -> str:
    """The content of a streamed chat completion read whole."""
    chunks = [json.loads(line[6:]) for line in response.text.splitlines()
              if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


async def keyed_turn(http: httpx.AsyncClient, thread: str, text: str, key: str) -> tuple[int, list[dict[str, Any]]]:
    """A turn under `key` over `/turns`, its events read until it ends or asks a person."""
    async with http.stream("POST", f"/threads/{thread}/turns", json={"text": text},
                           headers={"Idempotency-Key": key}) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, [response.json()]
        events = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                if events[-1]["type"] == "question":
                    break  # the turn waits for a person: the client leaves
        return response.status_code, events


async def say_on(http: httpx.AsyncClient, thread: str, text: str, stream: bool = False) -> str:
    response = await http.post("/v1/chat/completions", headers={"X-Thread-Id": thread}, json={
        "model": "desk", "messages": [{"role": "user", "content": text}], "stream": stream})
    assert response.status_code == 200, response.text
    return streamed_content(response) if stream else str(response.json()["choices"][0]["message"]["content"])


async def inbox_questions(http: httpx.AsyncClient, thread: str, **request: Any) -> list[dict[str, Any]]:
    """`thread`'s questions in GET /questions, once it lists them: the inbox reads the
    visibility store, which lags a conversation's own state (a question the workflow answers
    a query with may not be listed yet). Other tests' threads on the shared server are left out."""
    async def listed() -> list[dict[str, Any]]:
        return [q for q in (await http.get("/questions", **request)).json() if q["thread_id"] == thread]
    return await until(listed, f"a question of {thread} listed in the inbox")
