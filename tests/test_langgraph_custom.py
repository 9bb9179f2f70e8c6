"""LangGraph's `custom` stream mode through the real `langgraph-sdk`: what a team's tool wrote
with `get_stream_writer()` arrives as `custom` events, in order, once, before the tool's
message, among the other modes' frames and resumable by their ids; a stream without `custom`
shows none."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_client
from temporalio.client import Client

from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .crunching import DESK_SCRIPT, PROGRESS, SCRIPT, desk_team, progress_team
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def last_message(values: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = values["messages"][-1]
    return message


async def test_custom_events_stream_in_order_once_and_only_when_asked(client: Client, task_queue: str) -> None:
    team = progress_team()
    async with running_worker(client, task_queue, [team], ScriptedModel(SCRIPT)):
        async with running_gateway(client, task_queue, teams=["crunching"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="crunching"))["thread_id"]
            parts = [p async for p in lg.runs.stream(thread, "crunching", input=human("crunch three"),
                                                     stream_mode=["custom", "values"])]
            joined = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["custom", "values"])]
            first_custom = next(p for p in joined if p.event == "custom")
            resumed = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["custom", "values"],
                                                            last_event_id=first_custom.id)]
            without = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["values", "updates"])]

    events = [p.event for p in parts]
    assert [p.data for p in parts if p.event == "custom"] == PROGRESS  # both, in order, once
    assert set(events) == {"metadata", "custom", "values"}
    at = events.index("custom")
    # written while the tool ran: after the values with its call, before those with its result
    assert last_message(parts[at - 1].data)["tool_calls"][0]["name"] == "crunch"
    assert events[at:at + 3] == ["custom", "custom", "values"]
    assert last_message(parts[at + 2].data)["content"] == "crunched 3"
    assert last_message(parts[-1].data)["content"] == "All crunched."
    assert [(p.event, p.data, p.id) for p in joined] == [(p.event, p.data, p.id) for p in parts]
    assert [(p.event, p.data) for p in resumed] == [(p.event, p.data) for p in parts[at + 1:]]
    assert "custom" not in {p.event for p in without} and len(without) > 1


async def test_a_workers_writes_stream_with_its_answer(client: Client, task_queue: str) -> None:
    team = desk_team()
    async with running_worker(client, task_queue, [team], ScriptedModel(DESK_SCRIPT)):
        async with running_gateway(client, task_queue, teams=["desk"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="desk"))["thread_id"]
            parts = [p async for p in lg.runs.stream(thread, "desk", input=human("crunch three"),
                                                     stream_mode=["custom", "updates"])]
            joined = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["custom", "updates"])]
            state = await lg.threads.get_state(thread)

    assert [p.data for p in parts if p.event == "custom"] == PROGRESS
    at = [p.event for p in parts].index("custom")
    assert parts[at + 2].event == "updates" and "cruncher" in parts[at + 2].data  # the worker's answer next
    assert [(p.event, p.data, p.id) for p in joined] == [(p.event, p.data, p.id) for p in parts]
    assert "crunched 3" not in str(state["values"])  # the worker's tool message stays private
    assert last_message(state["values"])["content"] == "The cruncher is done."
