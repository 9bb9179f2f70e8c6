"""A queued run cancelled with `runs.cancel` before it began never writes its message: the runs
queued after it still find theirs (their stream, join and wait show exactly their own turn),
through the real `langgraph-sdk` client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client
from temporalio.client import Client

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, GatedModel

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def said(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"]]


async def test_runs_after_a_cancelled_queued_run_find_their_messages(client: Client, task_queue: str) -> None:
    model = GatedModel()  # the first run stays running until the gate opens
    async with running_worker(client, task_queue, [TEAM], model):
        async with running_gateway(client, task_queue, teams=["echo"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create())["thread_id"]
            first = await lg.runs.create(thread, "echo", input=human("first"))
            dropped = await lg.runs.create(thread, "echo", input=human("dropped"), multitask_strategy="enqueue")
            parts = lg.runs.stream(thread, "echo", input=human("third"), multitask_strategy="enqueue",
                                   stream_mode="messages-tuple")
            began = await anext(parts)  # its metadata: the run is queued behind the other two
            rejoined = lg.runs.join_stream(thread, began.data["run_id"], stream_mode="values")
            await anext(rejoined)  # its metadata: the join found the run queued
            cancelled = await lg.runs.cancel(thread, dropped["run_id"])
            model.gate.set()
            streamed = [part async for part in parts]
            rejoined_values = [said(part.data) async for part in rejoined if part.event == "values"]
            joined = await lg.runs.join(thread, began.data["run_id"])
            thread_runs = await lg.runs.list(thread)

            model.gate.clear()  # a thread busy again, a queued run cancelled before the next is sent
            busy = await lg.runs.create(thread, "echo", input=human("fourth"))
            gone = await lg.runs.create(thread, "echo", input=human("gone"), multitask_strategy="enqueue")
            await lg.runs.cancel(thread, gone["run_id"])
            waiting = asyncio.ensure_future(lg.runs.wait(thread, "echo", input=human("sixth"),
                                                         multitask_strategy="enqueue"))
            model.gate.set()
            waited = await waiting
            old_join = await lg.runs.join(thread, first["run_id"])
            busy_join = await lg.runs.join(thread, busy["run_id"])

    assert (first["run_id"], dropped["run_id"], began.data["run_id"]) == ("t1", "t2", "t3")
    assert cancelled["status"] == "interrupted"
    messages = [part.data[0]["content"] for part in streamed if part.event == "messages"]
    assert messages == ["heard: third"]  # its own answer, none of the first run's
    assert rejoined_values == [["first", "heard: first", "third"], ["first", "heard: first", "third", "heard: third"]]
    assert said(joined) == ["first", "heard: first", "third", "heard: third"]
    assert [(r["run_id"], r["status"]) for r in thread_runs] == [
        ("t3", "success"), ("t2", "interrupted"), ("t1", "success")]
    assert (busy["run_id"], gone["run_id"]) == ("t4", "t5")
    assert said(waited)[-2:] == ["sixth", "heard: sixth"]
    assert said(old_join) == said(waited) and said(busy_join) == said(waited)
