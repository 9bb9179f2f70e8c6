"""A thread id a client chooses is its tenant's own through the native door too (as through
the LangGraph door): a scoped caller's `thread_id` X is the workflow `<scope>:X`, every answer
names it X, another tenant choosing X gets its own thread (no 409 telling that X is in use), an
operator keeps workflow ids, and a thread a tenant made under a raw id before is still its own
(docs/architecture.md, "What is a tenant's own"; durable_teams/gateway/core/tenant_ids.py)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client

from durable_teams.client.start import start_conversation
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.core.tenant_ids import owned, shown, workflow_id
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .door_clients import a2a_agent, a2a_send
from .gateway_helpers import inbox_questions, running_gateway
from .teams import DESK, FIRST, TEAM, desk_script, echo

pytestmark = pytest.mark.workflow

TOKENS = [Token("tok-a", "shop"), Token("tok-b", "crm"), Token("tok-op")]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def turn(http: httpx.AsyncClient, thread: str, text: str, token: str) -> tuple[int, str | None, list[str]]:
    """A turn over `/turns`: its status, its `X-Thread-Id` and the types of its events."""
    async with http.stream("POST", f"/threads/{thread}/turns", json={"text": text}, headers=bearer(token)) as resp:
        kinds = []
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                kinds.append(json.loads(line[5:])["type"])
                if kinds[-1] == "question":
                    break  # the turn waits for a person: the client leaves
        return resp.status_code, resp.headers.get("x-thread-id"), kinds


async def said(http: httpx.AsyncClient, thread: str, token: str) -> list[str]:
    response = await http.get(f"/threads/{thread}/transcript", headers=bearer(token))
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()]


def test_a_tenants_id_maps_to_its_workflow_and_back() -> None:
    assert workflow_id("shop", "x") == "shop:x" and workflow_id(None, "x") == "x"
    assert shown("shop", "shop:x") == "x" and shown(None, "shop:x") == "shop:x" and shown("crm", "shop:x") == "shop:x"
    assert owned("shop", "shop:x") and not owned("crm", "shop:x") and owned(None, "anything")


@pytest.mark.slow  # starts a worker and a gateway
async def test_two_tenants_each_have_their_own_native_thread_of_one_id(client: Client, task_queue: str) -> None:
    shared = f"shared-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)), \
            running_gateway(client, task_queue, tokens=TOKENS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        made = {token: await http.post("/threads", json={"team": "echo", "thread_id": shared}, headers=bearer(token))
                for token in ("tok-a", "tok-b")}
        turns = {token: await turn(http, shared, f"from {token}", token) for token in ("tok-a", "tok-b")}
        heard = {token: await said(http, shared, token) for token in ("tok-a", "tok-b")}
        status = {token: (await http.get(f"/threads/{shared}", headers=bearer(token))).json()
                  for token in ("tok-a", "tok-b")}
        again = await http.post("/threads", json={"team": "echo", "thread_id": shared}, headers=bearer("tok-a"))
        forks = {token: await http.post(f"/threads/{shared}/fork", json={"thread_id": f"{shared}-branch"},
                                        headers=bearer(token)) for token in ("tok-a", "tok-b")}
        forked = (await http.get(f"/threads/{shared}-branch", headers=bearer("tok-a"))).json()
        operator = (await http.get(f"/threads/shop:{shared}", headers=bearer("tok-op"))).json()
        operator_raw = await http.get(f"/threads/{shared}", headers=bearer("tok-op"))
    for token in ("tok-a", "tok-b"):
        assert made[token].status_code == 201, made[token].text  # B learns nothing of A's id: no 409
        assert made[token].json() == {"thread_id": shared, "team": "echo"}
        assert turns[token] == (200, shared, turns[token][2]) and turns[token][2][-1] == "done"
        assert status[token]["thread_id"] == shared
    assert heard["tok-a"] == ["from tok-a", "heard: from tok-a"]  # each reads only its own
    assert heard["tok-b"] == ["from tok-b", "heard: from tok-b"]
    for token in ("tok-a", "tok-b"):  # a fork's chosen id is its tenant's own too
        assert forks[token].status_code == 201, forks[token].text
        assert forks[token].json()["thread_id"] == f"{shared}-branch"
        assert forks[token].json()["forked_from"].startswith(f"{shared}@")
    assert forked["thread_id"] == f"{shared}-branch" and forked["forked_from"] == forks["tok-a"].json()["forked_from"]
    assert again.status_code == 409 and again.json()["error"]["message"] == f"thread {shared} already exists"
    for scope in ("shop", "crm"):  # the workflows, as an operator names them
        memo = await (await client.get_workflow_handle(f"{scope}:{shared}").describe()).memo()
        assert memo["scope"] == scope
    assert operator["thread_id"] == f"shop:{shared}" and operator["last_reply"]["text"] == "heard: from tok-a"
    assert operator_raw.status_code == 404  # no workflow of the raw id: an operator's ids are workflow ids


@pytest.mark.slow  # starts a worker and a gateway
async def test_a_thread_a_tenant_made_under_a_raw_id_is_still_its_own(client: Client, task_queue: str) -> None:
    old = f"old-{uuid.uuid4().hex[:8]}"  # as a scoped caller's thread_id was kept before ids were per tenant
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        await start_conversation(client, "echo", ConversationInput(team_name="echo", single_turn=False),
                                 tenant="shop", id=old, task_queue=task_queue)
        async with running_gateway(client, task_queue, tokens=TOKENS) as url, \
                httpx.AsyncClient(base_url=url, timeout=60) as http:
            ran = await turn(http, old, "still here", "tok-a")
            heard = await said(http, old, "tok-a")
            status = await http.get(f"/threads/{old}", headers=bearer("tok-a"))
            again = await http.post("/threads", json={"team": "echo", "thread_id": old}, headers=bearer("tok-a"))
            other = await http.get(f"/threads/{old}", headers=bearer("tok-b"))
            others = await http.post("/threads", json={"team": "echo", "thread_id": old}, headers=bearer("tok-b"))
            operator = await http.get(f"/threads/{old}", headers=bearer("tok-op"))
            chatted = await http.post("/v1/chat/completions", headers=bearer("tok-a") | {"X-Thread-Id": old},
                                      json={"model": "echo", "messages": [{"role": "user", "content": "by chat"}]})
            prefixed = await http.get(f"/threads/shop:{old}", headers=bearer("tok-a"))  # no second name
            heard_after = await said(http, old, "tok-a")
    assert ran[:2] == (200, old) and heard == ["still here", "heard: still here"]
    assert chatted.status_code == 200 and chatted.headers["x-thread-id"] == old  # the chat's X-Thread-Id too
    assert heard_after == heard + ["by chat", "heard: by chat"]
    assert prefixed.status_code == 404 and prefixed.json()["error"]["message"] == f"no thread shop:{old}"
    assert status.status_code == 200 and status.json()["thread_id"] == old
    assert again.status_code == 409  # its own old thread: a new one of the id would hide it
    assert other.status_code == 404 and other.json()["error"]["message"] == f"no thread {old}"
    assert others.status_code == 201 and others.json()["thread_id"] == old  # crm's own, crm:old
    assert operator.status_code == 200 and operator.json()["thread_id"] == old
    assert (await (await client.get_workflow_handle(f"crm:{old}").describe()).memo())["scope"] == "crm"


@pytest.mark.slow  # starts a worker and a gateway
async def test_two_tenants_each_have_their_own_a2a_context_of_one_id(client: Client, task_queue: str) -> None:
    shared = f"ctx-{uuid.uuid4().hex[:8]}"
    echo_team = Swarm([Agent("echo", "Echo.")], name="echo").compile()
    async with running_worker(client, task_queue, [echo_team], ScriptedModel(echo)), \
            running_gateway(client, task_queue, tokens=TOKENS, cards=[card_of(echo_team.spec)]) as url:
        agents = {token: await a2a_agent(url, token, "echo") for token in ("tok-a", "tok-b", "tok-op")}
        first = {token: await a2a_send(agents[token], a2a_message(f"from {token}", context_id=shared))
                 for token in ("tok-a", "tok-b")}
        again = await a2a_send(agents["tok-a"], a2a_message("again", context_id=shared))
        listed = {token: [t.id for t in (await agents[token].list_tasks(
            pb.ListTasksRequest(context_id=shared))).tasks] for token in ("tok-a", "tok-b")}
        operator = await agents["tok-op"].get_task(pb.GetTaskRequest(id=f"shop:{first['tok-a'].id}"))
        heard = {scope: [m.content for m in await client.get_workflow_handle(f"{scope}:{shared}").query(
            TeamWorkflow.transcript, False)] for scope in ("shop", "crm")}
    for token in ("tok-a", "tok-b"):  # B learns nothing of A's id: not "taken"
        assert first[token].context_id == shared and first[token].status.message.context_id in ("", shared)
    assert first["tok-a"].id == first["tok-b"].id == f"{shared}::1"  # each tenant's own task of its own id
    assert [first[t].status.message.parts[0].text for t in ("tok-a", "tok-b")] == ["heard: from tok-a", "heard: from tok-b"]
    assert again.context_id == shared and again.id == f"{shared}::2"  # the same context: its second turn, its own id
    assert listed == {"tok-a": [again.id, first["tok-a"].id], "tok-b": [first["tok-b"].id]}
    assert operator.context_id == f"shop:{shared}" and operator.id == f"shop:{shared}::1"  # an operator names the workflow
    assert heard == {"shop": ["from tok-a", "heard: from tok-a", "again", "heard: again"],
                     "crm": ["from tok-b", "heard: from tok-b"]}


def a2a_message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


@pytest.mark.slow  # starts a worker and a gateway
async def test_a_tenants_inbox_and_answers_name_its_own_thread_id(client: Client, task_queue: str) -> None:
    shared = f"asks-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, tokens=TOKENS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        made = await http.post("/threads", json={"team": "desk", "thread_id": shared}, headers=bearer("tok-a"))
        asked = await turn(http, shared, FIRST, "tok-a")
        waiting = await inbox_questions(http, shared, headers=bearer("tok-a"))
        by_operator = await inbox_questions(http, f"shop:{shared}", headers=bearer("tok-op"))
        answered = await http.post(f"/threads/{shared}/questions/{waiting[0]['question_id']}",
                                   json={"text": "Order 9"}, headers=bearer("tok-a"))
        await client.get_workflow_handle(f"shop:{shared}").terminate("test over")  # no later inbox lists it
    assert made.status_code == 201 and asked[0] == 200 and asked[2][-1] == "question"
    assert [q["thread_id"] for q in waiting] == [shared] and waiting[0]["team"] == "desk"
    assert [q["question_id"] for q in by_operator] == [waiting[0]["question_id"]]
    assert answered.status_code == 200 and answered.json()["accepted"] is True
