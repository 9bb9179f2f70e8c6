"""How the LangGraph door waits for a run, through the real `langgraph-sdk` client: `runs.wait`
asks the workflow nothing while the run goes on (its outcome comes from the `turn_outcome`
update), a stream reads the thread once per step of it; several readers of one run in one
gateway (one waits by the update, the others by the thread's status) get every event once, in
order, and resume after `Last-Event-ID`; with the update unavailable (a worker of an earlier
release), questions and approvals come as interrupts all the same."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_teams.client import turn_outcome
from durable_teams.examples import faang, support
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .counting import counted
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


class HeldModel(ScriptedModel):
    """A scripted model whose calls wait until `gate` opens."""

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.gate = asyncio.Event()

    async def complete(self, req: Any, messages: Any, tools: Any) -> Any:
        await self.gate.wait()
        return await super().complete(req, messages, tools)


async def steps_of(client: Client, thread: str) -> int:
    """The workflow tasks the thread's history holds completed: the steps a reader may see."""
    history = await client.get_workflow_handle(thread).fetch_history()
    return sum(1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)


async def test_wait_asks_nothing_while_the_run_goes_on_and_a_stream_reads_once_per_step(client: Client,
                                                                                          task_queue: str) -> None:
    counting, queries = counted(client)
    async with running_worker(client, task_queue, [faang.build().compile()], ScriptedModel(faang.SCRIPT)):
        async with running_gateway(counting, task_queue, teams=["faang"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            waited_on = (await lg.threads.create(graph_id="faang"))["thread_id"]
            queries.asked.clear()
            waited = await lg.runs.wait(waited_on, "faang", input=human(faang.QUESTION))
            by_wait = dict(queries.asked)
            streamed_on = (await lg.threads.create(graph_id="faang"))["thread_id"]
            queries.asked.clear()
            parts = [p async for p in lg.runs.stream(streamed_on, "faang", input=human(faang.QUESTION),
                                                     stream_mode="updates")]
            by_stream = dict(queries.asked)
        steps = await steps_of(client, streamed_on)

    assert waited["messages"][-1]["content"] == faang.ANSWER
    # what the run was begun from (its status and conversation), then the conversation at its end
    assert by_wait == {"status": 1, "transcript": 2}
    assert [p.event for p in parts].count("updates") == 11 and parts[-1].data["supervisor"]["messages"][0][
        "content"] == faang.ANSWER
    # the thread's status once, when the run was begun; the conversation at most once a step
    assert by_stream["status"] == 1 and set(by_stream) == {"status", "transcript"}
    assert by_stream["transcript"] <= steps + 2 and steps >= 15


async def test_readers_of_one_run_at_once_get_every_event_once_in_order(client: Client, task_queue: str) -> None:
    """One reader waits by the update, the others (this process's waits on the thread are
    one at a time) by the thread's status."""
    model = HeldModel(faang.SCRIPT)
    counting, queries = counted(client)
    async with running_worker(client, task_queue, [faang.build().compile()], model):
        async with running_gateway(counting, task_queue, teams=["faang"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="faang"))["thread_id"]
            run = await lg.runs.create(thread, "faang", input=human(faang.QUESTION))
            attached = [asyncio.Event(), asyncio.Event()]

            async def read(n: int) -> list[tuple[str, Any, str | None]]:
                parts = []
                async for p in lg.runs.join_stream(thread, run["run_id"], stream_mode=["values", "updates"]):
                    parts.append((p.event, p.data, p.id))
                    attached[n].set()
                return parts

            readers = [asyncio.ensure_future(read(n)) for n in range(2)]
            joined = asyncio.ensure_future(lg.runs.join(thread, run["run_id"]))
            await asyncio.wait_for(asyncio.gather(*(a.wait() for a in attached)), 60)
            model.gate.set()  # the run goes on only once both streams are open
            one, two = await asyncio.wait_for(asyncio.gather(*readers), 120)
            final = await joined
            resumed = [(p.event, p.data, p.id) async for p in lg.runs.join_stream(
                thread, run["run_id"], stream_mode=["values", "updates"], last_event_id=one[7][2])]
        transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript)
        steps = await steps_of(client, thread)

    assert one == two
    ids = [tuple(map(int, str(i).split("."))) for _, _, i in one]
    assert ids == sorted(set(ids))  # each once, in order
    updated = [m["content"] for event, data, _ in one if event == "updates" for m in next(iter(data.values()))["messages"]]
    assert updated == [m.content or "" for m in transcript[1:]]  # every answer of the run, once
    values = [data for event, data, _ in one if event == "values"]
    assert len(values) == len(transcript) and values[-1] == final
    assert final["messages"][-1]["content"] == faang.ANSWER
    assert resumed == one[8:]
    # a reader that waits by the status reads it once a step (a poll without waiting would not)
    assert queries.asked["status"] <= 4 * (steps + 2)


@pytest.mark.parametrize("update", [True, False], ids=["by-update", "update-unavailable"])
async def test_a_question_and_an_approval_are_interrupts_whichever_way_the_run_waits(
        client: Client, task_queue: str, update: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not update:
        monkeypatch.setattr(turn_outcome, "IN_FLIGHT_PER_CONVERSATION", 0)
    support.REFUNDS.clear()
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["support"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create(graph_id="support"))["thread_id"]
            asked = await lg.runs.wait(thread, "support", input=human(support.QUESTION))
            approval = [p async for p in lg.runs.stream(thread, "support", command={"resume": "Order 4711"},
                                                        stream_mode="updates")]
            done = await lg.runs.wait(thread, "support", command={"resume": True})

    assert asked["__interrupt__"][0]["value"]["question"] == "Sorry to hear that! What's your order number?"
    interrupt = approval[-1].data["__interrupt__"][0]
    assert interrupt["value"]["action_requests"][0]["name"] == "execute_refund"
    assert "__interrupt__" not in done and done["messages"][-1]["content"] == support.ANSWER
    assert len(support.REFUNDS) == 1
