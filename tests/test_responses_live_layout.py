"""The live layout of a Responses stream and what one connection shows
(durable_teams/gateway/doors/responses/events.py, live.py): pure, no Temporal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from durable_teams.gateway.doors.responses.events import events, response_object
from durable_teams.gateway.doors.responses.from_log import ResponseRef, View, view_of
from durable_teams.gateway.doors.responses.live import OPENED, LiveText, merged
from durable_teams.live.hub import Delta
from durable_teams.workflows.messages import Message, ToolCall
from durable_teams.workflows.state import TurnReply

pytestmark = pytest.mark.pure

REF = ResponseRef("t", 1, 0)


def log() -> list[Message]:
    return [Message(role="user", content="Where is it?"),
            Message(role="assistant", name="desk", tool_calls=[ToolCall(id="c1", name="lookup", arguments="{}")]),
            Message(role="tool", name="lookup", tool_call_id="c1", content="shipped"),
            Message(role="assistant", name="desk", content="Shipped.")]


def final(status: str = "completed") -> View:
    text = "Shipped." if status == "completed" else "the model failed"
    return view_of(REF, log(), TurnReply(turn=1, text=text, agent="desk", status=status), [], set())


def test_the_message_opens_first_and_the_running_events_are_a_prefix() -> None:
    so_far = [events(view_of(REF, log()[:n], None, [], set()), "desk", 0, live=True) for n in range(1, 4)]
    last = events(final(), "desk", 0, live=True)
    for part in so_far:
        assert last[:len(part)] == part
    assert [e["type"] for e in last[:OPENED + 1]] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    assert last[2]["output_index"] == 0 and last[2]["item"]["type"] == "message"
    added = [(e["output_index"], e["item"]["type"]) for e in last if e["type"] == "response.output_item.added"]
    assert added == [(0, "message"), (1, "reasoning")]
    output = last[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["message", "reasoning"] and output[0]["content"][0]["text"] == "Shipped."
    assert response_object(final(), "desk", 0, live=True)["output"] == output
    # without live deltas: as before, the message at the end
    assert [i["type"] for i in response_object(final(), "desk", 0)["output"]] == ["reasoning", "message"]


def test_a_failed_response_closes_its_message_empty() -> None:
    last = events(final("failed"), "desk", 0, live=True)
    done = [e for e in last if e["type"] == "response.output_item.done" and e["output_index"] == 0]
    assert done[0]["item"]["status"] == "incomplete" and done[0]["item"]["content"][0]["text"] == ""
    assert last[-1]["type"] == "response.failed" and last[-1]["response"]["error"]["message"] == "the model failed"


def delta(text: str, call: str = "desk:1", position: int = 3, workflow_id: str = "t", reset: bool = False,
          shared: bool = True) -> Delta:
    return Delta(workflow_id, "desk", call, 1, text=text, position=position, reset=reset, shared=shared)


@pytest.mark.parametrize(("deltas", "shown", "rest"), [
    ([delta("Ship"), delta("ped.")], ["Ship", "ped."], ""),  # all of it live
    ([delta("Ship")], ["Ship"], "ped."),  # the rest owed
    ([delta("Ship", position=1)], [], "Shipped."),  # a call under way before the stream joined
    ([delta("Ship", workflow_id="other")], [], "Shipped."),  # another thread's
    ([delta("thinking", shared=False)], [], "Shipped."),  # a worker's own text
    ([delta("Let me look. ", call="desk:0"), delta("Shipped.")], ["Let me look. ", "\n\nShipped."], ""),
    ([delta("Shi"), delta("", reset=True), delta("Shipped.")], ["Shi", "\n\nShipped."], ""),  # retried
])
def test_one_connection_shows_each_call_it_saw_from_its_start(deltas: list[Delta], shown: list[str], rest: str) -> None:
    text = LiveText(REF, floor=2)
    got = [piece for d in deltas if (piece := text.take(d))]
    assert (got, text.rest("Shipped.")) == (shown, rest)
    if not rest and got and "\n\n" not in "".join(got):
        assert "".join(got) == "Shipped."


async def test_deltas_wait_until_the_first_view_is_out() -> None:
    queue: asyncio.Queue[Delta] = asyncio.Queue()
    queue.put_nowait(delta("early"))
    second = asyncio.Event()

    async def views() -> AsyncIterator[View]:
        yield view_of(REF, log()[:1], None, [], set())
        await second.wait()
        yield final()
    seen: list[str] = []
    async for got in merged(views(), queue):
        seen.append("view" if isinstance(got, View) else got.text)
        if len(seen) == 2:
            second.set()
    assert seen == ["view", "early", "view"]


