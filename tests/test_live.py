"""Live deltas in one process: published only to the conversation's subscribers, stamped with
the call and attempt, and a retried call first tells subscribers to discard its partial text."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from durable_teams.activities.model import OpenAIBackend
from durable_teams.cli.console import FollowPrinter
from durable_teams.client.events import Event, delta_event
from durable_teams.gateway.core.live_text import ContentStream
from durable_teams.live.hub import Delta, LiveOrder, LocalHub, ancestors, emit, streaming
from durable_teams.teams.builders import Agent, Swarm

from .conftest import running_worker
from .fake_openai import FakeOpenAI, Raw
from .gateway_helpers import read_sse, running_gateway

pytestmark = pytest.mark.workflow


async def test_a_retried_call_resets_and_deltas_reach_only_their_conversation() -> None:
    hub = LocalHub()
    emit("outside any call: dropped")
    async with hub.subscribe("wf-1") as mine, hub.subscribe("wf-2") as other:
        async with streaming("wf-1", "desk", "desk:0", 1, hub):
            emit("Hel")
            emit("")  # nothing to send
            emit("lo")
        async with streaming("wf-1", "desk", "desk:0", 2, hub):  # the same call, retried
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
             name="calc").compile()


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
        assert fake.requests[0]["stream_options"] == {"include_usage": True}  # else no token counts

    assert [(n, d.get("tool") or d["text"]) for n, d in frames] == [
        ("user_message", "1+2?"), ("tool_usage", "add"), ("tool_response", "add"),
        ("ai_message_delta", "1 + 2 "), ("ai_message_delta", "is 3."),
        ("ai_message", "1 + 2 is 3."), ("done", "1 + 2 is 3."),
    ]
    assert frames[1][1]["arguments"] == '{"a": 1, "b": 2}'
    assert frames[2][1]["text"] == "3"
    assert frames[3][1]["call"] == "calculator:1" and frames[3][1]["reset"] is False


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


def d(call: str, text: str = "", *, agent: str = "desk", position: int = 0, reset: bool = False,
      shared: bool = True) -> Delta:
    return Delta("wf", agent, call, 2 if reset else 1, text, reset=reset, position=position, shared=shared)


def test_deltas_wait_for_the_log_before_their_call_and_late_ones_are_dropped() -> None:
    order = LiveOrder()
    order.hold(d("desk:1", "Hi", position=3))
    order.hold(d("desk:0", "Old", position=1))
    assert order.ready(2) == [d("desk:0", "Old", position=1)]  # its call began by index 2
    order.logged(3, "desk")  # the message of desk:1 (index 3) is out: its held text goes
    assert order.ready(10) == []
    order.hold(d("desk:1", " there", position=3))  # arrived after its message: dropped
    order.hold(d("desk:2", "Next", position=4))  # the agent's next call: kept
    assert order.ready(4) == [d("desk:2", "Next", position=4)]


def test_the_openai_stream_ends_with_the_reply_whatever_was_streamed() -> None:
    plain = ContentStream()
    assert [plain.take(d("a:0", t)) for t in ("Hel", "lo")] == [{"content": "Hel"}, {"content": "lo"}]
    assert plain.finish("Hello") == ""

    worker = ContentStream()  # a supervisor's worker thinks aloud; the supervisor answers
    assert worker.take(d("w:0", "Looking", shared=False)) == {"reasoning_content": "Looking"}
    assert worker.take(d("w:1", "Found", shared=False)) == {"reasoning_content": "\n\nFound"}
    assert worker.take(d("s:0", "It is 4")) == {"content": "It is 4"}
    assert worker.finish("It is 42.") == "2."

    retried = ContentStream()  # sent text cannot be taken back: the retry starts a paragraph
    assert retried.take(d("a:0", "Par")) == {"content": "Par"}
    assert retried.take(d("a:0", reset=True)) == {}
    assert retried.take(d("a:0", "Full")) == {"content": "\n\nFull"}
    assert retried.finish("Full answer") == " answer"

    beside_a_tool = ContentStream()  # text written beside a handoff, then another agent answers
    beside_a_tool.take(d("a:0", "Let me ask."))
    beside_a_tool.take(d("b:0", "Done"))
    assert beside_a_tool.finish("Done.") == "."
    assert ContentStream().finish("No deltas at all") == "No deltas at all"
    after_a_question = ContentStream()
    after_a_question.take(d("a:0", "Hmm"))
    assert after_a_question.finish("[a] Which order?") == "\n\n[a] Which order?"


def test_follow_prints_live_text_on_the_line_its_message_then_ends() -> None:
    out: list[str] = []
    printer = FollowPrinter(out.append)
    for event in [
        Event(index=0, type="user_message", text="Hi"),
        delta_event(d("desk:0", "Hel")), delta_event(d("desk:0", "lo")),
        Event(index=1, type="ai_message", agent="desk", text="Hello"),
        delta_event(d("desk:1", "Par")), delta_event(d("desk:1", reset=True)), delta_event(d("desk:1", "Fu")),
        Event(index=2, type="ai_message", agent="desk", text="Full"),
        Event(index=-1, type="done", text="COMPLETED"),
    ]:
        printer.show(event)
    assert "".join(out).splitlines() == [
        "user_message  [user] Hi",
        "ai_message    [desk] Hello",
        "ai_message    [desk] Par",
        "ai_message    [desk] Fu",
        "ai_message    [desk] Full",  # the text differs from what streamed (a retry): printed whole
        "(workflow completed)",
    ]


async def test_a_nested_teams_text_reaches_the_readers_of_every_conversation_it_runs_in() -> None:
    assert ancestors("thread-1/research_team-2/analyst-1") == ["thread-1/research_team-2", "thread-1"]
    assert ancestors("thread-1") == [] and ancestors("a/b") == []  # not a child id
    hub = LocalHub()
    async with hub.subscribe("thread-1") as top, hub.subscribe("thread-1/research_team-2") as child:
        async with streaming("thread-1/research_team-2", "researcher", "researcher:0", 1, hub, position=5):
            emit("Found it")
    assert child.get_nowait() == Delta("thread-1/research_team-2", "researcher", "researcher:0", 1, "Found it",
                                       position=5)
    forwarded = top.get_nowait()  # private, and not ordered with the parent's log: ready at once
    assert forwarded == Delta("thread-1", "researcher", "researcher:0", 1, "Found it", position=-1, shared=False)
    order = LiveOrder()
    order.logged(3, "researcher")
    order.hold(forwarded)
    assert order.ready(0) == [forwarded]


class LoopOnlyHub(LocalHub):
    """Hubs are the event loop's (asyncio queues, a Redis client): publishing elsewhere fails."""

    def publish(self, delta: Delta) -> None:
        assert threading.get_ident() == threading.main_thread().ident, "published off the loop's thread"
        super().publish(delta)


async def test_text_a_backend_emits_from_its_own_thread_reaches_readers() -> None:
    hub = LoopOnlyHub()
    async with hub.subscribe("wf-1") as mine:
        async with streaming("wf-1", "desk", "desk:0", 1, hub):
            await asyncio.to_thread(emit, "from a thread")  # to_thread carries the call's context
        assert mine.get_nowait() == Delta("wf-1", "desk", "desk:0", 1, "from a thread")
