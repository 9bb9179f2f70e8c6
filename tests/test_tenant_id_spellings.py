"""One spelling per thread on every door, for a scoped caller (issue 49: "an id names exactly
one thing or is a 404"): a tenant's thread `X` (the workflow `<scope>:X`) answers to `X` only.
Its workflow form `<scope>:X` is no second name for it: a door that reads a thread gives its
own not-found, a door that starts one on demand (the chat's `X-Thread-Id`, A2A's `contextId`)
starts the caller's thread of that id, never `X` again; another tenant's `X` is its own thread
or none, never the first tenant's. No answer, error text or push notification shows the
workflow form (durable_teams/gateway/core/tenant_ids.py)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Awaitable
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from temporalio.client import Client, DescribeWorkflowInput, Interceptor, OutboundInterceptor

from durable_teams.activities.a2a_push_delivery import named_for
from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.core.tenant_ids import found, in_own_words
from durable_teams.gateway.doors.a2a.push_configs import PushOptions
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow

from .conftest import running_worker
from .door_clients import McpRpc, a2a_agent, a2a_message, a2a_send, refusal
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .teams import DESK, FIRST, TEAM, desk_script, echo
from .waiting import until

pytestmark = pytest.mark.workflow

TOKENS = [Token("tok-a", "shop"), Token("tok-b", "crm"), Token("tok-op")]
QUICK = PushOptions(allow_private=True, retry_seconds=0.01, poll_seconds=0.05)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Missing:
    """A `Gateway` whose every thread is missing except those named (`visible` as the core's)."""

    def __init__(self, *present: str) -> None:
        self.present = set(present)

    async def visible(self, thread: str, scope: str | None) -> None:
        if thread not in self.present:
            raise ConversationNotFound(f"no thread {thread}")


async def test_a_tenants_workflow_spelling_names_no_raw_workflow() -> None:
    gateway: Any = Missing("shop:x", "legacy")
    assert await found(gateway, "shop", "x") == "shop:x"
    assert await found(gateway, "shop", "shop:x") == "shop:shop:x"  # not the thread x again: none
    assert await found(gateway, "shop", "legacy") == "legacy"  # made under a raw id before: still found
    assert await found(gateway, "shop", "crm:y") == "crm:y"  # raw: the caller's read still checks its tenant
    assert await found(gateway, None, "shop:x") == "shop:x"  # an operator names workflows


def test_error_texts_name_a_tenants_threads_by_its_own_ids() -> None:
    assert in_own_words("shop", "no thread shop:x") == "no thread x"
    assert in_own_words("shop", "no thread shop:shop:x") == "no thread shop:x"  # the id the caller sent
    assert in_own_words("shop", "conversation shop:x ended (FAILED)") == "conversation x ended (FAILED)"
    assert in_own_words("shop", "no context 'shop:x'; POST /threads/shop:x/fork") == "no context 'x'; POST /threads/x/fork"
    assert in_own_words("shop", "workshop:x, crm:x, a shop: here") == "workshop:x, crm:x, a shop: here"
    assert in_own_words(None, "no thread shop:x") == "no thread shop:x"


def test_a_push_event_is_named_for_the_caller_that_set_its_config() -> None:
    message = {"messageId": "shop:x::2-ab12", "contextId": "shop:x", "taskId": "shop:x::2", "role": "ROLE_AGENT",
               "parts": [{"text": "shop:x is done"}]}
    event = {"statusUpdate": {"taskId": "shop:x::2", "contextId": "shop:x",
                              "status": {"state": "TASK_STATE_COMPLETED", "message": message}}}
    named = named_for(event, "x")
    assert named["statusUpdate"] == {"taskId": "x::2", "contextId": "x", "status": {
        "state": "TASK_STATE_COMPLETED", "message": message | {"messageId": "x::2-ab12", "contextId": "x",
                                                              "taskId": "x::2"}}}  # the words stay the agent's
    assert named_for(event, None) is event and event["statusUpdate"]["contextId"] == "shop:x"  # unchanged


async def chat(http: httpx.AsyncClient, thread: str, text: str, token: str) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers=bearer(token) | {"X-Thread-Id": thread},
                           json={"model": "echo", "messages": [{"role": "user", "content": text}]})


async def transcript(client: Client, workflow: str) -> list[str]:
    return [m.content or "" for m in await client.get_workflow_handle(workflow).query(TeamWorkflow.transcript, False)]


async def native_rows(http: httpx.AsyncClient, x: str) -> dict[str, Any]:
    own = await http.get(f"/threads/{x}", headers=bearer("tok-a"))
    rows: dict[str, Any] = {"own": (own.status_code, own.json()["thread_id"])}
    for name, token, path in (("prefixed", "tok-a", f"shop:{x}"), ("other", "tok-b", x)):
        for what, method, tail, body in (("status", "GET", "", None), ("transcript", "GET", "/transcript", None),
                                         ("turn", "POST", "/turns", {"text": "hello"}),
                                         ("fork", "POST", "/fork", {})):
            answer = await http.request(method, f"/threads/{path}{tail}", json=body, headers=bearer(token))
            rows[f"{name} {what}"] = (answer.status_code, answer.json()["error"]["message"])
    return rows


async def chat_rows(http: httpx.AsyncClient, client: Client, x: str) -> dict[str, Any]:
    own = await chat(http, x, "by chat", "tok-a")
    prefixed = await chat(http, f"shop:{x}", "prefixed", "tok-a")
    other = await chat(http, x, "from crm", "tok-b")
    return {"own": (own.status_code, own.headers["x-thread-id"]),
            "prefixed": (prefixed.status_code, prefixed.headers["x-thread-id"]),
            "other": (other.status_code, other.headers["x-thread-id"]),
            "x heard": await transcript(client, f"shop:{x}"),
            "prefixed heard": await transcript(client, f"shop:shop:{x}"),
            "crm heard": await transcript(client, f"crm:{x}")}


async def a2a_rows(url: str, x: str) -> dict[str, Any]:
    shop, crm = await a2a_agent(url, "tok-a", "echo"), await a2a_agent(url, "tok-b", "echo")
    own = await a2a_send(shop, a2a_message("by a2a", context_id=x))
    refused: dict[str, Awaitable[Any]] = {
        "prefixed task": shop.get_task(pb.GetTaskRequest(id=f"shop:{own.id}")),
        "other task": crm.get_task(pb.GetTaskRequest(id=own.id)),
        "answer by prefixed task": a2a_send(shop, a2a_message("yes", task_id=f"shop:{own.id}")),
        "answer naming prefixed context": a2a_send(shop, a2a_message("yes", task_id=own.id, context_id=f"shop:{x}")),
    }
    rows: dict[str, Any] = {name: await refusal(call) for name, call in refused.items()}
    listed = await shop.list_tasks(pb.ListTasksRequest(context_id=f"shop:{x}"))
    prefixed = await a2a_send(shop, a2a_message("prefixed context", context_id=f"shop:{x}"))
    return rows | {"own": (own.id, own.context_id), "prefixed listed": len(listed.tasks),
                   "prefixed context": (prefixed.id, prefixed.context_id, prefixed.status.message.parts[0].text)}


async def mcp_rows(http: httpx.AsyncClient, url: str, x: str) -> dict[str, Any]:
    shop, shop_tasks, crm = McpRpc(http, url, "tok-a", tasks=False), McpRpc(http, url, "tok-a"), McpRpc(
        http, url, "tok-b", tasks=False)
    rows: dict[str, Any] = {}
    for name, rpc, thread in (("own", shop, x), ("prefixed", shop, f"shop:{x}"), ("other", crm, x)):
        done = await rpc.call("tools/call", name="echo", arguments={"message": f"mcp {name}", "thread_id": thread})
        rows[name] = (done.get("isError", False), done["structuredContent"]["thread_id"], done["content"][0]["text"])
    task = await shop_tasks.call("tools/call", name="echo", arguments={"message": "as a task", "thread_id": x})
    rows["task"] = task["taskId"]
    rows["prefixed task"] = (await shop_tasks.error("tasks/get", taskId=f"shop:{task['taskId']}"))["message"]
    rows["other task"] = (await McpRpc(http, url, "tok-b").error("tasks/get", taskId=task["taskId"]))["message"]
    return rows


async def langgraph_rows(http: httpx.AsyncClient, x: str) -> dict[str, int]:
    made = await http.post("/langgraph/threads", json={"thread_id": x}, headers=bearer("tok-a"))
    assert made.status_code == 200, made.text
    return {name: (await http.get(f"/langgraph/threads/{path}", headers=bearer(token))).status_code
            for name, token, path in (("own", "tok-a", x), ("prefixed", "tok-a", f"shop:{x}"), ("other", "tok-b", x))}


@pytest.mark.slow  # a worker, a gateway, a push receiver and a turn or two through every door
async def test_every_door_takes_one_spelling_of_a_tenants_thread(client: Client, task_queue: str) -> None:
    run = uuid.uuid4().hex[:8]
    ids = {door: f"{door}-{run}" for door in ("native", "chat", "a2a", "mcp", "langgraph")}
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)), \
            running_gateway(client, task_queue, tokens=TOKENS, teams=["echo"], cards=[card_of(TEAM.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        for door in ("native", "chat", "a2a", "mcp"):  # shop's thread of each door, one turn in
            made = await http.post("/threads", json={"team": "echo", "thread_id": ids[door]}, headers=bearer("tok-a"))
            assert made.status_code == 201, made.text
            sent = await http.post(f"/threads/{ids[door]}/turns", json={"text": "first"}, headers=bearer("tok-a"))
            assert sent.status_code == 200, sent.text
        native = await native_rows(http, ids["native"])
        chats = await chat_rows(http, client, ids["chat"])
        a2a = await a2a_rows(url, ids["a2a"])
        mcp = await mcp_rows(http, url, ids["mcp"])
        langgraph = await langgraph_rows(http, ids["langgraph"])

    x = ids["native"]  # native: X is the thread; shop:X and crm's X are 404s that name the id sent
    assert native["own"] == (200, x)
    for what in ("status", "transcript", "turn", "fork"):
        assert native[f"prefixed {what}"] == (404, f"no thread shop:{x}"), (what, native)
        assert native[f"other {what}"] == (404, f"no thread {x}"), (what, native)
    x = ids["chat"]  # the chat: X continues X; shop:X and crm's X start their own threads of those ids
    assert chats["own"] == (200, x) and chats["prefixed"] == (200, f"shop:{x}") and chats["other"] == (200, x)
    assert chats["x heard"] == ["first", "heard: first", "by chat", "heard: by chat"]
    assert chats["prefixed heard"] == ["prefixed", "heard: prefixed"]
    assert chats["crm heard"] == ["from crm", "heard: from crm"]
    x = ids["a2a"]  # A2A: X's task is X::2 and answers to that id only
    assert a2a["own"] == (f"{x}::2", x)
    assert a2a["prefixed task"] == f"no context 'shop:{x}'"
    assert a2a["other task"] == f"no context '{x}'"
    assert a2a["answer by prefixed task"] == f"no context 'shop:{x}'"
    assert a2a["answer naming prefixed context"].startswith(f"context shop:{x} does not match context {x} ")
    assert a2a["prefixed listed"] == 0  # before shop made a context of that id: none
    assert a2a["prefixed context"] == (f"shop:{x}::1", f"shop:{x}", "heard: prefixed context")
    x = ids["mcp"]  # MCP: thread_id X continues X; shop:X is no thread; crm's X is none of its own
    assert mcp["own"] == (False, x, "heard: mcp own")
    assert mcp["prefixed"] == (True, f"shop:{x}", f"no thread shop:{x}")
    assert mcp["other"] == (True, x, f"no thread {x}")
    assert mcp["task"] == f"{x}::3"
    assert mcp["prefixed task"] == mcp["other task"].replace(f"'{x}::3'", f"'shop:{x}::3'")
    assert langgraph == {"own": 200, "prefixed": 404, "other": 404}
    shown = [str(row) for row in (native, a2a, mcp, chats)]
    assert not any("shop:shop:" in text for text in shown)


@pytest.mark.slow  # a worker, a gateway, a push receiver and a conversation with two questions
async def test_a_push_notification_names_the_task_as_the_door_shows_it_to_whoever_set_it(
        client: Client, task_queue: str) -> None:
    x = f"pushed-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), receiving() as receiver, \
            running_gateway(client, task_queue, tokens=TOKENS, cards=[card_of(DESK.spec)], a2a_push=QUICK) as url:
        shop, operator = await a2a_agent(url, "tok-a", "desk"), await a2a_agent(url, "tok-op", "desk")
        asked = await a2a_send(shop, a2a_message(FIRST, context_id=x))
        for agent, task, token in ((shop, asked.id, "shop's"), (operator, f"shop:{asked.id}", "operator's")):
            made = await agent.create_task_push_notification_config(pb.TaskPushNotificationConfig(
                task_id=task, url=receiver.url, token=token))
            assert made.task_id == task
        listed = await shop.list_task_push_notification_configs(pb.ListTaskPushNotificationConfigsRequest(
            task_id=asked.id))
        await a2a_send(shop, a2a_message("Order 4711", task_id=asked.id, context_id=x))
        await a2a_send(shop, a2a_message("yes", task_id=asked.id, context_id=x))

        async def told() -> bool:  # the approval and the end, to each config
            return len(receiver.accepted()) >= 4
        await until(told, "the approval's and the end's notifications to both configs")
        await client.get_workflow_handle(f"a2a-push:shop:{asked.id}").terminate("test over")
    assert asked.id == f"{x}::1" and asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert sorted(c.task_id for c in listed.configs) == [asked.id, asked.id]  # by the caller's id for it
    seen: dict[str, set[tuple[str, str, str]]] = {"shop's": set(), "operator's": set()}
    for headers, body in receiver.received:
        update = body["statusUpdate"]
        message = update["status"].get("message", {})
        seen[headers["X-A2A-Notification-Token"]].add((update["contextId"], update["taskId"],
                                                       message.get("messageId", "").rpartition("-")[0]))
    assert seen == {"shop's": {(x, f"{x}::1", f"{x}::1")},
                    "operator's": {(f"shop:{x}", f"shop:{x}::1", f"shop:{x}::1")}}, seen


class CountingDescribes(Interceptor):
    """Counts the workflows a client describes, by id."""

    def __init__(self) -> None:
        self.described: Counter[str] = Counter()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counter = self

        class Counting(OutboundInterceptor):
            async def describe_workflow(self, input: DescribeWorkflowInput) -> Any:
                counter.described[input.id] += 1
                return await super().describe_workflow(input)
        return Counting(next)


@pytest.mark.slow  # a worker and a gateway
async def test_a_tenants_own_thread_costs_one_describe_on_each_door_a_derived_one_two(client: Client, task_queue: str) -> None:
    describes = CountingDescribes()
    config = client.config()
    config["interceptors"] = [*config["interceptors"], describes]
    chosen = f"own-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)), \
            running_gateway(Client(**config), task_queue, tokens=TOKENS, teams=["echo"],
                            cards=[card_of(TEAM.spec)]) as url, \
            httpx.AsyncClient(base_url=url, timeout=60) as http:
        await http.post("/threads", json={"team": "echo", "thread_id": chosen}, headers=bearer("tok-a"))
        made = (await http.post("/threads", json={"team": "echo"}, headers=bearer("tok-a"))).json()["thread_id"]
        keyed = (await http.post("/threads", json={"team": "echo"}, headers=bearer("tok-a") | {
            "Idempotency-Key": uuid.uuid4().hex})).json()["thread_id"]
        describes.described.clear()
        for thread in (chosen, made, keyed):
            for tail in ("", "/transcript", "/checkpoints"):
                assert (await http.get(f"/threads/{thread}{tail}", headers=bearer("tok-a"))).status_code == 200
        routes = +describes.described
        describes.described.clear()
        assert (await chat(http, chosen, "hello", "tok-a")).status_code == 200
        chatted = +describes.described
        describes.described.clear()
        mcp = await McpRpc(http, url, "tok-a", tasks=False).call("tools/call", name="echo", arguments={
            "message": "hi", "thread_id": made})
        assert mcp["structuredContent"] == {"thread_id": made, "status": "completed", "text": "heard: hi"}
        continued = +describes.described
        task = (await McpRpc(http, url, "tok-a").call("tools/call", name="echo", arguments={
            "message": "as a task", "thread_id": made}))["taskId"]
        asked = await a2a_send(await a2a_agent(url, "tok-a", "echo"), a2a_message("hi", context_id=chosen))
        describes.described.clear()
        assert (await McpRpc(http, url, "tok-a").call("tasks/get", taskId=task))["taskId"] == task
        read = await (await a2a_agent(url, "tok-a", "echo")).get_task(pb.GetTaskRequest(id=asked.id))
        assert read.id == asked.id == f"{chosen}::2"  # its chat turn, then this one
        tasks_read = +describes.described
    # one describe per route for the tenant's own id, chosen or made at random (the checkpoints'
    # listing describes once more, for the run it reads); an id derived from a request (here its
    # Idempotency-Key: a retry derives it again) is a raw workflow id, and its own form is looked up first
    assert not made.startswith("shop:") and not keyed.startswith("shop:")
    assert routes == Counter({f"shop:{chosen}": 4, f"shop:{made}": 4, f"shop:{keyed}": 3, keyed: 4})
    # the chat's X-Thread-Id and MCP's thread_id: one describe for the tenant's own thread
    assert chatted == Counter({f"shop:{chosen}": 1}) and continued == Counter({f"shop:{made}": 1})
    assert tasks_read == Counter({f"shop:{made}": 1, f"shop:{chosen}": 1})  # MCP's tasks/get, A2A's GetTask
