"""The LangGraph Server API door driven by the real `langgraph-sdk` clients, unchanged: the
FAANG team's answer streamed (values, updates, messages-tuple, events), the support team's
question and approval as `__interrupt__`s resumed with `command={"resume": ...}` (exactly one
refund), a fork through `threads.copy`, and another tenant's threads and runs not found."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import (
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    UnprocessableEntityError,
)
from temporalio.client import Client

from durable_teams.examples import faang, support
from durable_teams.gateway.core.scopes import Token
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

CRM = {"Authorization": "Bearer crm-secret"}
TOKENS = [Token("shop-secret", "shop"), Token("crm-secret", "crm")]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def refunds_in(transcript: list[Any]) -> int:
    return sum(1 for m in transcript if m.role == "tool" and m.name == "execute_refund")


async def test_faang_streamed_through_the_async_client(client: Client, task_queue: str) -> None:
    team = faang.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(faang.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["faang"], tokens=TOKENS) as url:
            lg = get_client(url=f"{url}/langgraph", api_key="shop-secret")  # as x-api-key
            assistants = await lg.assistants.search()
            thread = await lg.threads.create()
            parts = [(part.event, part.data) async for part in lg.runs.stream(
                thread["thread_id"], "faang", input=human(faang.QUESTION),
                stream_mode=["values", "updates", "messages-tuple", "events"])]
            state: Any = await lg.threads.get_state(thread["thread_id"])
            listed = await lg.runs.list(thread["thread_id"])
            got = await lg.threads.get(thread["thread_id"])
            other = get_client(url=f"{url}/langgraph", headers=CRM, api_key=None)
            with pytest.raises(NotFoundError):
                await other.threads.get(thread["thread_id"])
            with pytest.raises(NotFoundError):
                await other.runs.get(thread["thread_id"], listed[0]["run_id"])
            with pytest.raises(NotFoundError):
                await other.runs.stream(thread["thread_id"], "faang", input=human("hi")).__anext__()
            found_by_other = await other.threads.search()
            found = await lg.threads.search(metadata={"graph_id": "faang"})

    assert [a["assistant_id"] for a in assistants] == ["faang"] and assistants[0]["graph_id"] == "faang"
    events = [event for event, _ in parts]
    assert events[0] == "metadata" and {"values", "updates", "messages", "events"} <= set(events)
    last_values = [data for event, data in parts if event == "values"][-1]
    assert last_values["messages"][-1]["type"] == "ai"
    assert last_values["messages"][-1]["content"] == faang.ANSWER and "1,977,586" in faang.ANSWER
    updates = [data for event, data in parts if event == "updates"]
    assert updates[0] == {"supervisor": {"messages": [updates[0]["supervisor"]["messages"][0]]}}
    assert [list(u)[0] for u in updates][-1] == "supervisor"
    streamed = [data[0]["content"] for event, data in parts if event == "messages"]
    assert streamed[-1] == faang.ANSWER and data_nodes(parts)[-1] == "supervisor"
    assert state["values"] == last_values and state["next"] == [] and state["interrupts"] == []
    assert [(r["run_id"], r["status"], r["assistant_id"]) for r in listed] == [("t1", "success", "faang")]
    assert got["status"] == "idle" and (got["metadata"] or {})["graph_id"] == "faang"
    assert found_by_other == [] and [t["thread_id"] for t in found] == [thread["thread_id"]]


def data_nodes(parts: list[tuple[str, Any]]) -> list[str]:
    return [data[1]["langgraph_node"] for event, data in parts if event == "messages"]


async def test_support_question_and_approval_resumed_through_the_sync_client(
        client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    team = support.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["support"]) as url:
            outcome = await asyncio.to_thread(support_flow, f"{url}/langgraph")
        transcript = await client.get_workflow_handle(outcome["thread"]).query(TeamWorkflow.transcript, True)

    asked, approval, unclear, done, state, copied, copied_state = (
        outcome[k] for k in ("asked", "approval", "unclear", "done", "state", "copied", "copied_state"))
    assert asked["__interrupt__"][0]["value"] == {"question": "Sorry to hear that! What's your order number?",
                                                  "agent": "triage_agent", "options": ["I don't have it"]}
    request = approval["__interrupt__"][0]["value"]["action_requests"][0]
    assert request["name"] == "execute_refund" and approval["__interrupt__"][0]["id"] != asked["__interrupt__"][0]["id"]
    assert unclear == 400  # "maybe" is no approval: asked again, the interrupt stays open
    assert "__interrupt__" not in done and done["messages"][-1]["content"] == support.ANSWER
    assert state["status"] == "idle"
    assert len(support.REFUNDS) == 1 and refunds_in(transcript) == 1
    assert copied["thread_id"] != outcome["thread"] and copied["metadata"]["graph_id"] == "support"
    assert copied_state["values"]["messages"] == done["messages"]


def support_flow(url: str) -> dict[str, Any]:
    """The support conversation as a LangGraph user writes it, with the sync client."""
    lg = get_sync_client(url=url, api_key=None)
    thread = lg.threads.create(graph_id="support")["thread_id"]
    asked = lg.runs.wait(thread, "support", input=human(support.QUESTION))
    approval = lg.runs.wait(thread, "support", command={"resume": "Order 4711"})
    try:
        lg.runs.wait(thread, "support", command={"resume": "maybe"})
        unclear = 200
    except Exception as err:  # noqa: BLE001 - the status is what is asserted
        unclear = getattr(getattr(err, "response", None), "status_code", 0)
    with_input = None
    try:
        lg.runs.create(thread, "support", input=human("hello?"))
    except ConflictError as err:
        with_input = err
    assert with_input is not None, "a turn while an interrupt waits is refused (multitask_strategy reject)"
    done = lg.runs.wait(thread, "support", command={"resume": True})
    copied: Any = lg.threads.copy(thread)  # type: ignore[func-returns-value]  # the server answers the new thread
    return {"thread": thread, "asked": asked, "approval": approval, "unclear": unclear, "done": done,
            "state": lg.threads.get(thread), "copied": copied,
            "copied_state": lg.threads.get_state(copied["thread_id"])}


async def test_background_runs_joined_cancelled_listed_and_what_is_not_served(client: Client, task_queue: str) -> None:
    support.REFUNDS.clear()
    teams = [faang.build().compile(), support.build().compile()]
    model = ScriptedModel(teams={"faang": faang.SCRIPT, "support": support.SCRIPT})
    async with running_worker(client, task_queue, teams, model):
        async with running_gateway(client, task_queue, teams=["faang", "support"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            with pytest.raises(BadRequestError, match="name the thread's team"):
                await lg.threads.create()  # two teams here: which one?
            thread = (await lg.threads.create(graph_id="faang"))["thread_id"]
            run = await lg.runs.create(thread, "faang", input=human(faang.QUESTION))
            joined = await lg.runs.join(thread, run["run_id"])
            got = await lg.runs.get(thread, run["run_id"])
            history = await lg.threads.get_history(thread, limit=3)
            replayed = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["updates", "messages"])]
            resumed = [p async for p in lg.runs.join_stream(thread, "t1", stream_mode=["updates", "messages"],
                                                            last_event_id=replayed[5].id)]
            created = await lg.runs.wait("made-on-demand", "faang", input=human(faang.QUESTION), if_not_exists="create")
            resumable = [p async for p in lg.runs.stream(None, "faang", input=human(faang.QUESTION),
                                                         stream_resumable=True)]
            with pytest.raises(httpx.HTTPStatusError) as mismatch:  # `wait` raises httpx's own
                await lg.runs.wait(thread, "support", input=human("hello"))
            asked = await lg.runs.wait(None, "support", input=human(support.QUESTION))  # a thread of its own
            desk = (await lg.threads.search(metadata={"graph_id": "support"}))[0]["thread_id"]
            interrupted = await lg.threads.search(status="interrupted")
            cancelled = await lg.runs.cancel(desk, "t1")
            desk_state = await lg.threads.get_state(desk)
            with pytest.raises(UnprocessableEntityError, match="checkpoint_id"):
                await lg.runs.create(thread, "faang", input=human("again"), checkpoint_id="c1")
            with pytest.raises(UnprocessableEntityError, match="stream_mode .tasks."):
                await lg.runs.stream(thread, "faang", input=human("again"), stream_mode="tasks").__anext__()
            with pytest.raises(UnprocessableEntityError, match="on_completion='delete'"):
                await lg.runs.create(None, "faang", input=human("again"), on_completion="delete")
            with pytest.raises(InternalServerError, match="not supported by durable-teams' LangGraph door: counting threads"):
                await lg.threads.count()
            with pytest.raises(NotFoundError, match="no assistant 'nobody'"):
                await lg.assistants.get("nobody")
            with pytest.raises(NotFoundError, match="no run"):
                await lg.runs.get(thread, "t9")
            await lg.threads.delete(thread)
            with pytest.raises(NotFoundError):
                await lg.threads.get(thread)
            async with httpx.AsyncClient(base_url=f"{url}/langgraph") as raw:
                ok, info = (await raw.get("/ok")).json(), (await raw.get("/info")).json()

    assert mismatch.value.response.status_code == 409
    assert "belongs to team 'faang', not 'support'" in mismatch.value.response.json()["error"]["message"]
    assert run["run_id"] == "t1" and run["status"] in ("pending", "running", "success")
    assert joined["messages"][-1]["content"] == faang.ANSWER and got["status"] == "success"
    assert [(p.event, p.data, p.id) for p in resumed] == [(p.event, p.data, p.id) for p in replayed[6:]]
    complete = [p.data[0]["content"] for p in replayed if p.event == "messages/complete"]
    assert complete[-1] == faang.ANSWER and replayed[0].event == "metadata"
    assert len(replayed) == 1 + 11 * 3  # metadata, then each of the turn's 11 answers: an update, its metadata, itself
    assert created["messages"][-1]["content"] == faang.ANSWER
    assert resumable[-1].event == "values" and resumable[-1].data["messages"][-1]["content"] == faang.ANSWER
    assert len(history) == 3 and history[0]["metadata"]["kind"] == "turn_end"
    assert history[0]["parent_checkpoint"]["checkpoint_id"] == history[1]["checkpoint"]["checkpoint_id"]
    assert asked["__interrupt__"][0]["value"]["question"] == "Sorry to hear that! What's your order number?"
    assert [t["thread_id"] for t in interrupted] == [desk]
    assert cancelled["run_id"] == "t1" and cancelled["status"] == "interrupted"
    assert desk_state["interrupts"] == [] and desk_state["next"] == []
    assert support.REFUNDS == []
    assert ok == {"ok": True} and info["flags"]["assistants"] is True


async def test_an_interrupted_run_resumes_through_another_gateway_after_the_worker_restarts(
        client: Client, task_queue: str) -> None:
    """Nothing of a thread or a run is kept in the gateway or the worker: the interrupt asked
    through one gateway is resumed through another, by a new worker."""
    support.REFUNDS.clear()
    team = support.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["support"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            thread = (await lg.threads.create())["thread_id"]
            await lg.runs.wait(thread, "support", input=human(support.QUESTION))
            approval = await lg.runs.wait(thread, "support", command={"resume": "Order 4711"})
    async with running_worker(client, task_queue, [team], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, teams=["support"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            waiting = await lg.threads.get_state(thread)
            run = (await lg.runs.list(thread))[0]
            done = await lg.runs.wait(thread, "support", command={"resume": {approval["__interrupt__"][0]["id"]: "yes"}})
        transcript = await client.get_workflow_handle(thread).query(TeamWorkflow.transcript, True)

    assert waiting["interrupts"] == approval["__interrupt__"] and run == run | {"run_id": "t1", "status": "interrupted"}
    assert done["messages"][-1]["content"] == support.ANSWER
    assert len(support.REFUNDS) == 1 and refunds_in(transcript) == 1
