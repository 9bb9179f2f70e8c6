"""A streamed turn shows each step from the worker's announcement on the live hub
(durable_teams/gateway/core/step_news.py): the same events, in the same order, as the stream
that reads the log at each step, for a fraction of the queries; and when the worker announces
on a hub the gateway does not read (another process, no shared broker), the stream reads the
log at each step as before, shows every step and ends. Over Redis, announcements travel
encrypted as deltas do, to readers of steps only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from temporalio.client import Client

from durable_teams.encryption.codec import EncryptionCodec
from durable_teams.examples import faang
from durable_teams.live.hub import LIVE, Delta, LocalHub, Logged
from durable_teams.live.redis_hub import RedisHub
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.messages import Message

from .conftest import running_worker
from .counting import counted
from .gateway_helpers import running_gateway
from .redis_server import redis_url_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # FAANG turns on gateways of their own, a Redis server


async def streamed_turn(client: Client, task_queue: str, worker_hub: LocalHub) -> tuple[list[Any], dict[str, int]]:
    """A FAANG turn over the native turn stream, the worker announcing on `worker_hub`, the
    gateway reading `LIVE`: its events and the queries the gateway asked during it."""
    gateway_client, queries = counted(client)
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT), live_hub=worker_hub), \
            running_gateway(gateway_client, task_queue, live_hub=LIVE) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        thread = (await http.post("/threads", json={"team": "faang"})).json()["thread_id"]
        queries.asked.clear()
        async with http.stream("POST", f"/threads/{thread}/turns", json={"text": faang.QUESTION}) as response:
            assert response.status_code == 200
            events = [json.loads(line[5:]) async for line in response.aiter_lines() if line.startswith("data:")]
    return events, dict(queries.asked)


async def test_announced_steps_stream_as_the_log_reads_them_for_a_fraction_of_the_queries(
        client: Client, task_queue: str) -> None:
    announced, announced_asked = await streamed_turn(client, task_queue, LIVE)
    read, read_asked = await streamed_turn(client, f"{task_queue}-elsewhere", LocalHub())  # not the gateway's

    assert len(announced) == 25 and announced[-1]["type"] == "done" and announced[-1]["text"] == faang.ANSWER
    assert announced == read  # every step, in order, with the same content, either way
    assert read_asked["log_page"] >= 10, read_asked  # read at each step: nothing announced reached it
    # the turn's start (where its events begin) and one read at its end to confirm
    assert announced_asked["log_page"] <= 2, announced_asked
    assert set(announced_asked) == {"log_page"}, announced_asked


async def test_announcements_cross_redis_sealed_to_step_readers_only(redis_url: str) -> None:
    """Over Redis, in a message of their own, encrypted as deltas are: a reader of steps gets
    them with the deltas, in the order published; a reader of deltas alone (an earlier
    release's too) does not."""
    codec = EncryptionCodec({"k1": bytes(range(32))})
    writer, reader = RedisHub(redis_url, codec=codec), RedisHub(redis_url, codec=codec)
    said = Message(role="assistant", content="the secret plan", name="a")
    async with reader.subscribe_steps("wf-1") as steps, reader.subscribe("wf-1") as deltas, \
            aioredis.from_url(redis_url).pubsub() as raw:
        await raw.subscribe("durable-teams:live:wf-1")
        writer.publish(Delta("wf-1", "a", "a:0", 1, text="the secret"))
        writer.publish(Logged("wf-1", "r1", 3, said.model_dump(mode="json")))
        await writer.flush()
        got = [await asyncio.wait_for(steps.get(), 10), await asyncio.wait_for(steps.get(), 10)]
        assert got == [Delta("wf-1", "a", "a:0", 1, text="the secret"),
                       Logged("wf-1", "r1", 3, said.model_dump(mode="json"))]
        assert (await asyncio.wait_for(deltas.get(), 10)).text == "the secret"
        sent = [m async for m in _messages(raw, 3)]  # the subscription's confirmation, then the two
        assert all(b"secret" not in m for m in sent)
    assert deltas.empty()


async def _messages(pubsub: Any, count: int) -> AsyncIterator[bytes]:
    for _ in range(count):
        message = await asyncio.wait_for(pubsub.get_message(timeout=10), 15)
        if message is not None and message["type"] == "message":
            yield message["data"]
