"""Live text in a Responses stream (durable_teams/gateway/doors/responses/live.py): a worker in its own
process streams its model's text over a real redis-server to the gateway, which shows it in the
message item while the model writes; the durable events stay numbered as before, a stream
resumed with `starting_after` gets each of them once, and the deltas add up to the text.

The model endpoint (tests/fake_openai.py) sends the first piece of its answer and holds the
rest until the test has read that piece from the gateway; were deltas not live, the test's
bounded wait would run out first.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest
from temporalio.client import Client

from durable_teams.live.redis_hub import RedisHub

from .cli_process import ROOT, cli_env
from .fake_openai import FakeOpenAI, held_answer
from .gateway_helpers import running_gateway, sse_events
from .redis_server import redis_url_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

WITHIN = 60.0


@contextmanager
def worker_process(client: Client, task_queue: str, redis_url: str, model_url: str) -> Iterator[None]:
    """tests/worker_process.py serving `echo` on the model at `model_url`, deltas on redis."""
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


def durable(numbers: list[int]) -> list[int]:
    """Sequence numbers as sent, each once: a live delta repeats the one before it."""
    assert numbers == sorted(numbers), numbers
    return sorted(set(numbers))


async def test_a_stream_shows_the_text_live_and_resumes_without_gap_or_duplicate(
        client: Client, task_queue: str, redis_url: str) -> None:
    first, resume_first = held_answer("Hel", "lo there.")
    helper, resume_helper = held_answer("Fine", ", thanks.")
    from_sdk, resume_sdk = held_answer("Same", " here.")
    third, resume_third = held_answer("Good", "bye now.")
    with FakeOpenAI([first, helper, from_sdk, third]) as fake, worker_process(client, task_queue, redis_url, fake.base_url):
        async with running_gateway(client, task_queue, live_hub=RedisHub(redis_url)) as url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            events: list[Any] = []
            async with asyncio.timeout(WITHIN):
                async for event in await ai.responses.create(model="echo", input="Hi", stream=True):
                    events.append(event)
                    if event.type == "response.output_text.delta":
                        resume_first.set()  # the endpoint sends the rest only now: "Hel" came live
            final = events[-1].response
            deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
            assert deltas[0] == "Hel" and "".join(deltas) == final.output_text == "Hello there."
            numbers = [e.sequence_number for e in events]
            assert durable(numbers) == list(range(len(set(numbers))))
            assert final.output[0].type == "message" and final.output[0].id == events[2].item.id

            # the openai client's own stream helper accumulates the live deltas into the message
            async with asyncio.timeout(WITHIN), ai.responses.stream(
                    model="echo", input="How are you?", previous_response_id=final.id) as stream:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        resume_helper.set()
                got = await stream.get_final_response()
            assert got.output_text == "Fine, thanks."

            # the OpenAI Agents SDK's default model, streamed: the text as it comes, then the answer
            from agents import Agent as SDKAgent
            from agents import OpenAIResponsesModel, Runner, set_tracing_disabled
            set_tracing_disabled(True)
            sdk = SDKAgent(name="echo", model=OpenAIResponsesModel("echo", ai))
            run = Runner.run_streamed(sdk, "And you?", previous_response_id=got.id)
            shown: list[str] = []
            async with asyncio.timeout(WITHIN):
                async for item in run.stream_events():
                    if item.type == "raw_response_event" and item.data.type == "response.output_text.delta":
                        shown.append(item.data.delta)
                        resume_sdk.set()
            assert "".join(shown) == run.final_output == "Same here."

            # a stream left in the middle of the text, resumed from its last event: every
            # durable event once; the call under way when it rejoined comes whole at the end
            async with httpx.AsyncClient(base_url=url, timeout=WITHIN) as http:
                seen: list[tuple[int, str]] = []
                async with asyncio.timeout(WITHIN), http.stream("POST", "/v1/responses", json={
                        "model": "echo", "input": "Bye", "stream": True, "background": True,
                        "previous_response_id": run.last_response_id}) as left:
                    async for name, data in sse_events(left):
                        seen.append((data["sequence_number"], name))
                        if name == "response.created":
                            response_id = data["response"]["id"]
                        if name == "response.output_text.delta":
                            assert data["delta"] == "Good"
                            break  # the client goes away
                last = seen[-1][0]
                resume_third.set()
                rest: list[dict[str, Any]] = []
                async with asyncio.timeout(WITHIN), http.stream(
                        "GET", f"/v1/responses/{response_id}",
                        params={"stream": "true", "starting_after": str(last)}) as resumed:
                    rest = [data async for _, data in sse_events(resumed)]
            resumed_numbers = [e["sequence_number"] for e in rest]
            assert resumed_numbers[0] == last + 1
            assert durable([n for n, _ in seen]) + durable(resumed_numbers) == list(range(resumed_numbers[-1] + 1))
            texts = [e["delta"] for e in rest if e["type"] == "response.output_text.delta"]
            assert texts == ["Goodbye now."] and rest[-1]["response"]["output"][0]["content"][0]["text"] == texts[0]
        assert [r["stream"] for r in fake.requests] == [True, True, True, True]


async def test_without_a_broker_a_stream_is_as_before(client: Client, task_queue: str) -> None:
    """The process-local hub: no live layout (the message item comes at the end, as always)."""
    answer, resume = held_answer("Plain ", "text.")
    resume.set()
    with FakeOpenAI([answer]) as fake, worker_process(client, task_queue, "", fake.base_url):
        async with running_gateway(client, task_queue) as url:
            ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            events = [e async for e in await ai.responses.create(model="echo", input="Hi", stream=True)]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert events[4].delta == "Plain text."  # type: ignore[union-attr]
