"""Live deltas in one process: published only to the conversation's subscribers, stamped with
the call and attempt, and a retried call first tells subscribers to discard its partial text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.activities.model import OpenAIBackend
from durable_teams.builders import Agent, Swarm
from durable_teams.live import Delta, LiveHub, emit, streaming

from .conftest import running_worker
from .fake_openai import FakeOpenAI, Raw
from .gateway_helpers import read_sse, running_gateway


async def test_a_retried_call_resets_and_deltas_reach_only_their_conversation() -> None:
    hub = LiveHub()
    emit("outside any call: dropped")
    with hub.subscribe("wf-1") as mine, hub.subscribe("wf-2") as other:
        with streaming("wf-1", "desk", "desk:0", 1, hub):
            emit("Hel")
            emit("")  # nothing to send
            emit("lo")
        with streaming("wf-1", "desk", "desk:0", 2, hub):  # the same call, retried
            emit("Hello again")
        got = [mine.get_nowait() for _ in range(mine.qsize())]
        assert other.empty()
    assert got == [
        Delta("wf-1", "desk", "desk:0", 1, "Hel"), Delta("wf-1", "desk", "desk:0", 1, "lo"),
        Delta("wf-1", "desk", "desk:0", 2, reset=True), Delta("wf-1", "desk", "desk:0", 2, "Hello again"),
    ]
    assert hub.subscribers == {}  # unsubscribed when the readers left


def sse_body(*chunks: dict[str, Any]) -> str:
    """A streamed Chat Completion as an endpoint sends it."""
    frames = [f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [c]})}\n\n" for c in chunks]
    return "".join(frames) + "data: [DONE]\n\n"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


CALC = Swarm([Agent("calculator", "You add numbers.", tools=[add], model="test-model")],
             team_name="calc").compile()


async def test_an_openai_stream_reaches_the_gateway_as_deltas(client: Client, task_queue: str) -> None:
    with FakeOpenAI() as fake:
        fake.raw(Raw(content_type="text/event-stream", body=sse_body(  # a tool call, in pieces
            {"index": 0, "delta": {"role": "assistant", "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1,'}}]}},
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 2}'}}]}},
            {"index": 0, "delta": {}, "finish_reason": "tool_calls"})))
        fake.raw(Raw(content_type="text/event-stream", body=sse_body(
            {"index": 0, "delta": {"role": "assistant", "content": "1 + 2 "}},
            {"index": 0, "delta": {"content": "is 3."}},
            {"index": 0, "delta": {}, "finish_reason": "stop"})))
        backend = OpenAIBackend(base_url=fake.base_url, api_key="sk-test", stream=True)
        async with running_worker(client, task_queue, [CALC], backend), \
                running_gateway(client, task_queue) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
            thread = (await http.post("/threads", json={"team": "calc"})).json()["thread_id"]
            async with http.stream("POST", f"/threads/{thread}/turns", json={"text": "1+2?"}) as resp:
                frames = await read_sse(resp)
        assert [r["stream"] for r in fake.requests] == [True, True]

    assert [(n, d.get("tool") or d["text"]) for n, d in frames] == [
        ("user_message", "1+2?"), ("tool_usage", "add"), ("tool_response", "add"),
        ("ai_message_delta", "1 + 2 "), ("ai_message_delta", "is 3."),
        ("ai_message", "1 + 2 is 3."), ("done", "1 + 2 is 3."),
    ]
    assert frames[1][1]["arguments"] == '{"a": 1, "b": 2}'
    assert frames[2][1]["text"] == "3"
    assert frames[3][1]["call"] == "calculator:1" and frames[3][1]["attempt"] == 1


async def test_a_stream_that_breaks_off_is_refused_in_words() -> None:
    from durable_teams.activities.model_parse import BadModelResponse
    from durable_teams.activities.model_stream import read_stream

    async def lines(*items: str) -> AsyncIterator[str]:
        for item in items:
            yield item
    sent: list[str] = []
    body = await read_stream(lines(": keep-alive", 'data: {"choices": [{"delta": {"content": "hi"}}]}'),
                             sent.append, 1000)
    assert body["choices"][0]["message"]["content"] == "hi" and sent == ["hi"]
    with pytest.raises(BadModelResponse, match="not JSON"):
        await read_stream(lines('data: {"choices": ['), sent.append, 1000)
    with pytest.raises(BadModelResponse, match="byte limit"):
        await read_stream(lines("data: " + "x" * 2000), sent.append, 1000)
    error = await read_stream(lines('data: {"error": {"message": "overloaded", "code": 503}}'), sent.append, 1000)
    assert error["error"]["message"] == "overloaded"
