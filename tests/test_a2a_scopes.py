"""The A2A door keeps to a scoped token's tasks (durable_teams/gateway/core/scopes.py): another
scope's task or context is the same error as a missing one, `ListTasks` lists the caller's
own; operators see all. Its streams count against the caller's `--max-followers`."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .door_clients import a2a_agent, refusal
from .door_clients import a2a_send as send
from .gateway_helpers import running_gateway, sse_events
from .teams import GatedModel

pytestmark = pytest.mark.workflow

SUPPORT = [card_of(support.build().compile().spec)]
ECHO = Swarm([Agent("echo", "Echo.")], name="echo").compile()
RUN = uuid.uuid4().hex[:6]  # scope names of this run's own: another test's inbox of "shop" never sees these
SHOP, CRM = f"shop{RUN}", f"crm{RUN}"
TOKENS = [Token("tok-shop", SHOP), Token("tok-crm", CRM), Token("tok-op")]


def message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def agent_for(url: str, token: str, team: str = "support", streaming: bool = False) -> Any:
    return await a2a_agent(url, token, team, streaming)


async def listed(agent: Any, **fields: Any) -> list[str]:
    return [t.id for t in (await agent.list_tasks(pb.ListTasksRequest(**fields))).tasks]


@pytest.mark.slow  # two conversations and every kind of request: over a second
async def test_a_scoped_token_sees_only_its_own_tasks_and_operators_see_all(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)):
        async with running_gateway(client, task_queue, tokens=TOKENS, cards=SUPPORT) as url:
            shop, crm, operator = [await agent_for(url, t) for t in ("tok-shop", "tok-crm", "tok-op")]
            crm_stream = await agent_for(url, "tok-crm", streaming=True)
            asked = await send(shop, message(support.QUESTION))
            thread, missing = asked.context_id, f"support-none-{uuid.uuid4().hex[:8]}"
            other = {
                "get": await refusal(crm.get_task(pb.GetTaskRequest(id=asked.id))),
                "cancel": await refusal(crm.cancel_task(pb.CancelTaskRequest(id=asked.id))),
                "answer": await refusal(send(crm, message("Order 4711", task_id=asked.id, context_id=thread))),
                "subscribe": await refusal(anext(aiter(crm_stream.subscribe(pb.SubscribeToTaskRequest(id=asked.id))))),
            }
            none = {
                "get": await refusal(crm.get_task(pb.GetTaskRequest(id=f"{missing}::1"))),
                "cancel": await refusal(crm.cancel_task(pb.CancelTaskRequest(id=f"{missing}::1"))),
                "answer": await refusal(send(crm, message("Order 4711", task_id=f"{missing}::1"))),
                "subscribe": await refusal(anext(aiter(crm_stream.subscribe(pb.SubscribeToTaskRequest(
                    id=f"{missing}::1"))))),
            }
            crm_own = await send(crm, message(support.QUESTION))
            lists = {name: await listed(agent) for name, agent in (("shop", shop), ("crm", crm), ("op", operator))}
            crm_of_shop = await listed(crm, context_id=thread)
            shop_of_shop = await listed(shop, context_id=thread)
            crm_same_id = await send(crm, message("hello", context_id=thread))  # its own context of that id
            by_operator = await operator.get_task(pb.GetTaskRequest(id=f"{SHOP}:{asked.id}"))  # the workflow's id
            answered = await send(shop, message("Order 4711", task_id=asked.id, context_id=thread))
        # left waiting for a person: no inbox of later tests lists it
        for waiting in (f"{SHOP}:{thread}", f"{CRM}:{crm_own.context_id}", f"{CRM}:{thread}"):
            await client.get_workflow_handle(waiting).terminate("test over")

    for what, text in other.items():  # the same words as for no task at all, but for the id
        assert text.replace(thread, "X") == none[what].replace(missing, "X"), what
        assert "no context" in text, what
    # a tenant's contextId is its own (core/tenant_ids.py): another's id is not "taken", nothing told
    # (its task ids its own too: `<context>::<turn>`, named as the caller names the context)
    assert crm_same_id.context_id == thread and crm_same_id.id == f"{thread}::1"
    assert crm_same_id.status.message.parts[0].text != answered.status.message.parts[0].text
    assert lists["shop"][0] == asked.id and crm_own.id not in lists["shop"]
    assert lists["crm"][0] == crm_own.id and asked.id not in lists["crm"]
    assert {f"{SHOP}:{asked.id}", f"{CRM}:{crm_own.id}"} <= set(lists["op"])  # an operator sees workflow ids
    assert crm_of_shop == [] and shop_of_shop == [asked.id]
    assert by_operator.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert answered.id == asked.id and "Approve execute_refund(" in answered.status.message.parts[0].text
    memo = await (await client.get_workflow_handle(f"{SHOP}:{thread}").describe()).memo()
    assert memo["scope"] == SHOP and "tok-shop" not in str(memo)


async def test_a2a_streams_count_against_the_callers_followers(client: Client, task_queue: str) -> None:
    model = GatedModel()  # the first turn works until the gate opens: its stream stays open
    cards = [card_of(ECHO.spec)]
    async with running_worker(client, task_queue, [ECHO], model), \
            running_gateway(client, task_queue, cards=cards, limits=Limits(max_followers=1)) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        def rpc(method: str, params: dict[str, Any], version: str = "1.0") -> dict[str, Any]:
            return {"json": {"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                    "headers": {"A2A-Version": version}}
        text = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        async with http.stream("POST", "/a2a/echo", **rpc("SendStreamingMessage", text)) as held:
            frames = sse_events(held)
            first = (await anext(frames))[1]["result"]["task"]
            over = [await http.post("/a2a/echo", **rpc("SendStreamingMessage", text)),
                    await http.post("/a2a/echo", **rpc("SubscribeToTask", {"id": first["id"]})),
                    await http.post("/a2a/echo", **rpc("tasks/resubscribe", {"id": first["id"]}, "0.3")),
                    await http.get(f"/threads/{first['contextId']}/events")]
            not_streamed = await http.post("/a2a/echo", **rpc("GetTask", {"id": first["id"]}))
            model.gate.set()
            rest = [frame async for frame in frames]
        after = await http.post("/a2a/echo", **rpc("SendStreamingMessage", text | {"message": text["message"] | {
            "messageId": uuid.uuid4().hex, "contextId": first["contextId"]}}))

    assert first["status"]["state"] == "TASK_STATE_WORKING"
    for response in over[:3]:
        assert response.status_code == 429 and response.headers["retry-after"] == "1"
        assert response.json() == {"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32000, "message": "too many open streams for this caller; try again later"}}
    assert over[3].status_code == 429  # and the gateway's own followers count the A2A stream
    assert not_streamed.status_code == 200 and not_streamed.json()["result"]["id"] == first["id"]
    assert rest[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert after.status_code == 200 and "TASK_STATE_COMPLETED" in after.text  # its stream given back
