"""Live deltas across processes over Redis: a worker in its own process streams a model's text
to the gateway (native SSE and the OpenAI-compatible stream) and to `durable-teams follow`, each
in another process, while the model is still writing.

The model endpoint (tests/fake_openai.py) sends the first part of its answer and then holds the
rest until the test has seen that part arrive at the reader; were deltas not live, the test's
bounded wait would run out first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest
import redis.asyncio as aioredis
from temporalio.client import Client

from durable_teams.encryption.codec import EncryptionCodec
from durable_teams.live.hub import Delta
from durable_teams.live.redis_hub import RedisHub
from durable_teams.worker.devserver import free_port

from .cli_process import ROOT, cli_env, one_line_failure, run_cli
from .fake_openai import FakeOpenAI, held_answer
from .gateway_helpers import running_gateway, sse_events
from .redis_server import redis_url_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

WITHIN = 60.0
"""Every wait for a delta is bounded by this (the endpoint holds its rest for longer)."""


def delta(text: str, workflow_id: str = "wf-1", **fields: Any) -> Delta:
    return Delta(workflow_id, "desk", "desk:0", 1, text=text, **fields)


async def publish_calls(url: str) -> int:
    stats = await aioredis.from_url(url).info("commandstats")
    return int(stats.get("cmdstat_publish", {}).get("calls", 0))


async def test_deltas_cross_between_processes_hubs_in_one_publish_per_round_trip(redis_url: str) -> None:
    writer, reader = RedisHub(redis_url), RedisHub(redis_url)
    before = await publish_calls(redis_url)
    async with reader.subscribe("wf-1") as mine, reader.subscribe("wf-2") as other:
        for i in range(100):  # a fast model: all of them before the first send goes out
            writer.publish(delta(f"t{i} "))
        writer.publish(delta("", reset=True, workflow_id="wf-2"))
        await writer.flush()
        got = [await asyncio.wait_for(mine.get(), WITHIN) for _ in range(100)]
        assert await asyncio.wait_for(other.get(), WITHIN) == delta("", reset=True, workflow_id="wf-2")
    assert [d.text for d in got] == [f"t{i} " for i in range(100)]
    assert got[0] == delta("t0 ")  # every field survives the trip
    assert await publish_calls(redis_url) - before == 2  # one PUBLISH per conversation, not per token
    assert mine.empty()


async def test_with_encryption_the_broker_never_sees_the_text(redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    codec = EncryptionCodec({"k1": os.urandom(32)})
    writer, reader, keyless = RedisHub(redis_url, codec), RedisHub(redis_url, codec), RedisHub(redis_url)
    spy = aioredis.from_url(redis_url).pubsub()
    await spy.subscribe(RedisHub.channel("wf-s"))
    async with reader.subscribe("wf-s") as deltas:
        writer.publish(delta("refund order 4711 to card 4242", workflow_id="wf-s"))
        await writer.flush()
        assert (await asyncio.wait_for(deltas.get(), WITHIN)).text == "refund order 4711 to card 4242"
    seen = None
    while seen is None or seen["type"] != "message":
        seen = await asyncio.wait_for(spy.get_message(timeout=WITHIN), WITHIN)
    assert b"4711" not in seen["data"] and b"refund" not in seen["data"]
    with caplog.at_level(logging.WARNING, "durable_teams.live.redis_hub"):
        assert await keyless.decode(seen["data"]) == []  # a reader without the key reads nothing
    assert "set DURABLE_TEAMS_ENCRYPTION_KEY" in caplog.text
    await spy.aclose()


async def test_a_broker_that_is_down_costs_the_live_view_only(caplog: pytest.LogCaptureFixture) -> None:
    hub = RedisHub(f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    with caplog.at_level(logging.WARNING, "durable_teams.live.redis_hub"):
        async with hub.subscribe("wf-1") as deltas:  # the reader goes on without deltas
            hub.publish(delta("lost"))
            await hub.flush()  # the model call goes on: nothing raised
            assert deltas.empty()
    assert len(caplog.records) == 1 and "no live deltas from redis://" in caplog.text
    assert "hunter2" not in caplog.text and "hunter2" not in repr(hub)


@contextmanager
def worker_process(client: Client, task_queue: str, redis_url: str, model_url: str) -> Iterator[None]:
    env = cli_env(client, DURABLE_TEAMS_LIVE_URL=redis_url, DURABLE_TEAMS_TEST_MODEL_URL=model_url)
    proc = subprocess.Popen([sys.executable, "-m", "tests.worker_process",
                             client.service_client.config.target_host, task_queue],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "worker ready"
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_a_worker_in_another_process_streams_to_the_gateway_and_follow(
        client: Client, task_queue: str, redis_url: str) -> None:
    native, resume_native = held_answer("Hel", "lo there.")
    compat, resume_compat = held_answer("Good", "bye now.")
    followed, resume_follow = held_answer("Step ", "by step.")
    with FakeOpenAI([native, compat, followed]) as fake, \
            worker_process(client, task_queue, redis_url, fake.base_url):
        async with running_gateway(client, task_queue, live_hub=RedisHub(redis_url)) as url, \
                httpx.AsyncClient(base_url=url, timeout=WITHIN) as http:
            thread = (await http.post("/threads", json={"team": "echo"})).json()["thread_id"]
            frames = await native_turn(http, thread, "Hi", resume_native)
            assert frames == [("user_message", "Hi"), ("ai_message_delta", "Hel"),
                              ("ai_message_delta", "lo there."), ("ai_message", "Hello there."),
                              ("done", "Hello there.")]
            assert await compat_turn(url, thread, "Bye", resume_compat) == ["", "Good", "bye now."]
            lines = await followed_turn(client, task_queue, http, thread, redis_url, resume_follow)
            assert lines[-1] == "ai_message    [echo] Step by step.", lines
        assert [r["stream"] for r in fake.requests] == [True, True, True]


async def native_turn(http: httpx.AsyncClient, thread: str, text: str,
                      resume: threading.Event) -> list[tuple[str, str]]:
    frames: list[tuple[str, str]] = []
    async with asyncio.timeout(WITHIN), http.stream("POST", f"/threads/{thread}/turns", json={"text": text}) as resp:
        async for name, data in sse_events(resp):
            frames.append((name, data["text"]))
            if name == "ai_message_delta":
                resume.set()  # the endpoint sends the rest only now: the first piece came live
            if name == "done":
                break
    return frames


async def compat_turn(url: str, thread: str, text: str, resume: threading.Event) -> list[str]:
    """The content pieces an OpenAI client reads, streaming."""
    model = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    pieces: list[str] = []
    async with asyncio.timeout(WITHIN):
        stream = await model.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": text}], stream=True,
            extra_headers={"X-Thread-Id": thread})
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content is not None:
                pieces.append(chunk.choices[0].delta.content)
                if pieces[-1]:
                    resume.set()
    return pieces


async def followed_turn(client: Client, task_queue: str, http: httpx.AsyncClient, thread: str,
                        redis_url: str, resume: threading.Event) -> list[str]:
    """`durable-teams follow` in its own process prints the text as it comes."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "durable_teams", "follow", thread, "--start", "3", cwd=ROOT,
        env=cli_env(client, task_queue, DURABLE_TEAMS_LIVE_URL=redis_url),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    seen = b""
    try:
        async with asyncio.timeout(WITHIN):
            seen += await proc.stdout.readuntil(b"\n")  # the last turn's answer: follow listens, send the turn
            turn = asyncio.ensure_future(http.post(f"/threads/{thread}/turns", json={"text": "How?"}))
            while b"[echo] Step " not in seen:
                seen += await proc.stdout.read(1)
            resume.set()
            while not seen.endswith(b"by step.\n"):
                seen += await proc.stdout.read(1)
            await turn
    finally:
        proc.terminate()
        await proc.wait()
    return seen.decode().splitlines()


@pytest.mark.parametrize("command", [["serve"], ["worker"], ["follow", "no-such-thread"]])
async def test_a_live_url_that_is_not_redis_is_one_line_at_start(client: Client, command: list[str]) -> None:
    env = cli_env(client, DURABLE_TEAMS_LIVE_URL="http://user:hunter2@broker:4222")
    outcome = await run_cli(*command, env=env)
    line = one_line_failure(outcome)
    assert "DURABLE_TEAMS_LIVE_URL=http://user:***@broker:4222 is not a Redis URL" in line, line
    assert "hunter2" not in outcome.both
