"""A stream subscribes to its thread's live hub before its turn goes in, and hands the
subscription to its response: closed when the response is over however it ends, even when the
client leaves before the first byte (the body's generator never runs, so its own `finally`
never does: durable_teams/gateway/core/sse.py `ClosingStream`). Each door's stream is driven
as raw ASGI by a client that sends its request, never reads, and is gone at once; then the
thread has no subscriber left in the gateway's hub (on Redis: no subscription to its channel)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from redis import asyncio as aioredis
from temporalio.client import Client

from durable_teams.examples import faang
from durable_teams.gateway import create_app
from durable_teams.live.hub import LiveHub, LocalHub
from durable_teams.live.redis_hub import RedisHub
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .redis_server import redis_url_fixture  # noqa: F401 - the fixture
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # FAANG turns on a worker of its own

ASGIApp = Callable[..., Awaitable[None]]


@asynccontextmanager
async def faang_app(client: Client, task_queue: str, hub: LiveHub) -> AsyncIterator[tuple[ASGIApp, httpx.AsyncClient]]:
    """The gateway's ASGI app on `hub` (not served: called directly), a FAANG worker behind it
    announcing on `hub`, and an httpx client on the app for the requests around the one left."""
    team = faang.build().compile()
    app = create_app(client, task_queue=task_queue, poll_seconds=0.05, live_hub=hub, teams=["faang"])
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT), live_hub=hub), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost", timeout=60) as http:
        yield app, http


async def left_at_once(app: ASGIApp, path: str, body: dict[str, Any] | None, reads: int = 0,
                       query: str = "") -> list[dict[str, Any]]:
    """POST `path` as a client that sends its request, takes the response's first `reads`
    messages (none: not even its start goes out) and is gone (`http.disconnect`) as the next
    one is sent (no `body`: a GET): what the app tried to send."""
    incoming = [{"type": "http.request", "body": json.dumps(body).encode() if body else b"", "more_body": False}]
    sent: list[dict[str, Any]] = []
    done_reading = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await done_reading.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if len(sent) > reads:  # one it does not read: it leaves, and this waits until the response ends
            done_reading.set()
            await asyncio.Event().wait()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST" if body else "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 40000), "server": ("localhost", 80)}
    await asyncio.wait_for(app(scope, receive, send), 60)
    return sent


def stream_started(sent: list[dict[str, Any]]) -> None:
    """The response was a stream (its start tried), and not one byte of its body went out."""
    assert [m["type"] for m in sent] == ["http.response.start"], sent
    assert sent[0]["status"] == 200
    assert (b"content-type", b"text/event-stream; charset=utf-8") in sent[0]["headers"]


async def test_a_native_turn_stream_left_before_its_first_byte_unsubscribes(client: Client, task_queue: str) -> None:
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, http):
        made = await http.post("/threads", json={"team": "faang"})
        assert made.status_code == 201, made.text
        thread = made.json()["thread_id"]
        stream_started(await left_at_once(app, f"/threads/{thread}/turns", {"text": faang.QUESTION}))
        assert hub.subscriber_count(thread) == 0


async def test_a_native_turn_stream_left_in_its_midst_unsubscribes_at_once(client: Client, task_queue: str) -> None:
    """Left while the response waits to send a frame (its generator paused at a `yield`, which
    no cancel reaches): closed as the response ends, not whenever the generator is collected."""
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, http):
        made = await http.post("/threads", json={"team": "faang"})
        thread = made.json()["thread_id"]
        sent = await left_at_once(app, f"/threads/{thread}/turns", {"text": faang.QUESTION}, reads=2)
        assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "http.response.body"]
        assert hub.subscriber_count(thread) == 0


async def test_a_responses_stream_left_before_its_first_byte_unsubscribes(client: Client, task_queue: str) -> None:
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, http):
        first = (await http.post("/v1/responses", json={"model": "faang", "input": faang.QUESTION})).json()
        stream_started(await left_at_once(app, "/v1/responses", {
            "model": "faang", "input": faang.QUESTION, "stream": True, "previous_response_id": first["id"]}))
        assert hub.subscribers == {} and hub.step_subscribers == {}  # on no thread: none left


async def test_a_responses_stream_resumed_and_left_before_its_first_byte_unsubscribes(
        client: Client, task_queue: str) -> None:
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, http):
        first = (await http.post("/v1/responses", json={"model": "faang", "input": faang.QUESTION})).json()
        stream_started(await left_at_once(app, f"/v1/responses/{first['id']}", None, query="stream=true"))
        assert hub.subscribers == {} and hub.step_subscribers == {}


async def test_a_chat_completions_stream_left_before_its_first_byte_unsubscribes(
        client: Client, task_queue: str) -> None:
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, _):
        stream_started(await left_at_once(app, "/v1/chat/completions", {
            "model": "faang", "messages": [{"role": "user", "content": faang.QUESTION}], "stream": True}))
        assert hub.subscribers == {} and hub.step_subscribers == {}


async def test_a_langgraph_run_stream_left_before_its_first_byte_unsubscribes(client: Client, task_queue: str) -> None:
    hub = LocalHub()
    async with faang_app(client, task_queue, hub) as (app, http):
        thread = (await http.post("/langgraph/threads", json={})).json()["thread_id"]
        run = {"assistant_id": "faang", "input": {"messages": [{"role": "user", "content": faang.QUESTION}]}}
        stream_started(await left_at_once(app, f"/langgraph/threads/{thread}/runs/stream", run))
        assert hub.subscriber_count(thread) == 0


async def test_on_redis_a_responses_stream_left_before_its_first_byte_keeps_no_subscription(
        client: Client, task_queue: str, redis_url: str) -> None:
    """With a broker the stream subscribes to the thread's channel twice (steps, and text
    deltas: Responses streams show them then); both are closed."""
    hub, spy = RedisHub(redis_url), aioredis.from_url(redis_url)
    try:
        async with faang_app(client, task_queue, hub) as (app, http):
            first = (await http.post("/v1/responses", json={"model": "faang", "input": faang.QUESTION})).json()
            stream_started(await left_at_once(app, "/v1/responses", {
                "model": "faang", "input": faang.QUESTION, "stream": True, "previous_response_id": first["id"]}))

            async def none_left() -> bool:
                return await spy.pubsub_numpat() == 0 and not await spy.pubsub_channels()
            await until(none_left, "the stream's subscriptions closed", within=10)
    finally:
        await spy.aclose()
