"""A model call that times out or is cancelled closes its HTTP connection to the endpoint, and a
reply whose JSON holds a lone surrogate is repaired and used: through the openai client's
aiohttp transport, in a worker, against an endpoint on a socket this test watches."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from durable_teams.activities.heartbeats import THROTTLE
from durable_teams.activities.model import OpenAIBackend
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.options import ModelCalls
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .fake_openai import FakeOpenAI, Raw

pytestmark = pytest.mark.workflow


class HoldingEndpoint:
    """Accepts connections, reads requests, never answers; knows which connections are open."""

    def __init__(self) -> None:
        self.open = 0
        self.requests = asyncio.Event()
        self.closed = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            while await reader.read(65536):
                self.requests.set()
        finally:
            self.open -= 1
            self.closed.set()
            writer.close()


@asynccontextmanager
async def holding_endpoint() -> AsyncIterator[tuple[HoldingEndpoint, str]]:
    endpoint = HoldingEndpoint()
    server = await asyncio.start_server(endpoint.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield endpoint, f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()


def team(timeout: float, local: bool):  # noqa: ANN201 - a compiled team
    calls = ModelCalls(timeout_seconds=timeout, total_timeout_seconds=timeout, max_attempts=1, local=local)
    return Swarm([Agent("writer", "Writes.", model="m", model_calls=calls)]).compile()


def start(client: Client, task_queue: str, compiled):  # noqa: ANN001, ANN201
    return client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=compiled.spec, task="write", set_search_attributes=False),
        id=f"held-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


@asynccontextmanager
async def a_held_call(client: Client, task_queue: str, call_seconds: float,
                      local: bool) -> AsyncIterator[tuple[HoldingEndpoint, WorkflowHandle]]:
    """A conversation whose one model call the endpoint holds open (its connection counted)."""
    compiled = team(call_seconds, local)
    async with holding_endpoint() as (endpoint, url):
        backend = OpenAIBackend(base_url=url, api_key="sk-test")
        async with running_worker(client, task_queue, [compiled], backend):
            handle = await start(client, task_queue, compiled)
            await asyncio.wait_for(endpoint.requests.wait(), 10)
            assert endpoint.open == 1
            yield endpoint, handle
        await backend.aclose()


@pytest.mark.parametrize("local", [True, False])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_timed_out_call_closes_its_connection(client: Client, task_queue: str, local: bool) -> None:
    async with a_held_call(client, task_queue, 2.0, local) as (endpoint, handle):
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 20)
        await asyncio.wait_for(endpoint.closed.wait(), 1.0)  # right after the failure
        assert endpoint.open == 0


@pytest.mark.parametrize("local", [True, False])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_cancelled_call_closes_its_connection(client: Client, task_queue: str, local: bool) -> None:
    async with a_held_call(client, task_queue, 60.0, local) as (endpoint, handle):
        await handle.cancel()
        # a local call hears of it at its workflow task's next heartbeat (within 80% of the
        # 10 s task timeout); a regular one at its next heartbeat's answer (THROTTLE)
        await asyncio.wait_for(endpoint.closed.wait(), 10.0 if local else THROTTLE.total_seconds() + 3)
        assert endpoint.open == 0


async def test_a_reply_with_a_lone_surrogate_is_repaired_and_used(client: Client, task_queue: str) -> None:
    compiled = team(30.0, True)
    body = ('{"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", '
            '"message": {"role": "assistant", "content": "caf\\udc80 ok"}}]}')
    assert "\udc80" in json.loads(body)["choices"][0]["message"]["content"]
    with FakeOpenAI([Raw(body)]) as fake:
        backend = OpenAIBackend(base_url=fake.base_url, api_key="sk-test")
        async with running_worker(client, task_queue, [compiled], backend):
            result = await asyncio.wait_for((await start(client, task_queue, compiled)).result(), 20)
        await backend.aclose()
    assert (result.status, result.answer) == ("completed", "caf? ok")
    assert len(fake.requests) == 1  # used at once, not retried


@pytest.mark.parametrize("local", [True, False])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_every_attempt_of_a_timed_out_call_closes_its_connection(client: Client, task_queue: str,
                                                                       local: bool) -> None:
    """Three attempts, each timed out: none of their connections is open once the turn failed."""
    calls = ModelCalls(timeout_seconds=2.0, total_timeout_seconds=6.0, max_attempts=3, local=local)
    compiled = Swarm([Agent("writer", "Writes.", model="m", model_calls=calls)]).compile()
    async with holding_endpoint() as (endpoint, url):
        backend = OpenAIBackend(base_url=url, api_key="sk-test")
        async with running_worker(client, task_queue, [compiled], backend):
            handle = await start(client, task_queue, compiled)
            with pytest.raises(WorkflowFailureError):
                await asyncio.wait_for(handle.result(), 40)
            open_at_failure = endpoint.open
        await backend.aclose()
    assert open_at_failure == 0
