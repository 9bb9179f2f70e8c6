"""MCP tasks on the gateway's /mcp, over raw JSON-RPC (the `mcp` SDK 2.3's client has no
tasks): the 2026-07-28 tasks extension (tasks/get, tasks/update, tasks/cancel) and the
2025-11-25 form (a `task` field, tasks/result, tasks/list), a task polled across a gateway
restart, a question answered, a turn cancelled, scoped tokens kept to their threads."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client as McpClient
from pydantic import TypeAdapter
from temporalio.client import Client

from durable_teams.gateway.core.auth import Limits
from durable_teams.gateway.core.scopes import Token
from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.mcp.door import McpDoor
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.messages import ModelRequest

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

GATE: dict[str, asyncio.Event] = {}
TOLD: list[str] = []


@tool
async def track(order: str) -> str:
    """Track an order (waits for the test's gate; notes a cancellation)."""
    GATE["started"].set()
    try:
        await GATE["open"].wait()
    except asyncio.CancelledError:
        TOLD.append(order)
        raise
    return f"order {order}: shipped"


def shop_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool" and last["content"].startswith("order "):
        return say(last["content"])
    if last["role"] == "tool":
        return say(f"Refund started for order {last['content']}.")
    if last["content"] == "refund":
        return call("ask_human", question="Which order?")
    if last["content"] == "track":
        return call("track", order="4711")
    return say(f"you said {last['content']!r}")


SHOP = Swarm([Agent("shop", "Help.", description="Refunds and orders.", tools=["ask_human", track])],
             name="shop").compile()
OPTIONS: dict[str, Any] = {"teams": ["shop"], "cards": [TeamCard("shop", "Refunds.", ())]}
MODERN, LEGACY = "2026-07-28", "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"


class Rpc:
    """Raw JSON-RPC to /mcp: `call` returns the result, `error` the error object."""

    def __init__(self, http: httpx.AsyncClient, url: str, token: str | None = None, version: str = MODERN,
                 tasks: bool = True) -> None:
        self.http, self.url, self.version, self.tasks = http, url, version, tasks
        self.headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    async def post(self, method: str, params: dict[str, Any]) -> httpx.Response:
        if self.version == MODERN:
            caps = {"extensions": {EXTENSION: {}}} if self.tasks else {}
            params = params | {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                         "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                                         "io.modelcontextprotocol/clientCapabilities": caps}}
        name = params.get("taskId", params.get("name"))  # the routing header (SEP-2663)
        headers = self.headers | {"Mcp-Method": method} | ({"Mcp-Name": name} if isinstance(name, str) else {})
        return await self.http.post(f"{self.url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                                             "params": params}, headers=headers)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        response = await self.post(method, params)
        body = response.json()
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def error(self, method: str, **params: Any) -> dict[str, Any]:
        body = (await self.post(method, params)).json()
        assert "error" in body, body
        found: dict[str, Any] = body["error"]
        return found

    async def status(self, task: str, wanted: str) -> dict[str, Any]:
        async def seen() -> dict[str, Any] | None:
            got = await self.call("tasks/get", taskId=task)
            return got if got["status"] == wanted else None
        return await until(seen, f"task {task} {wanted}", within=30)


async def test_a_task_polled_across_a_gateway_restart_and_its_question_answered_by_tasks_update(
        client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), httpx.AsyncClient() as http:
        async with running_gateway(client, task_queue, **OPTIONS) as url:
            rpc = Rpc(http, url)
            created = await rpc.call("tools/call", name="shop", arguments={"message": "refund"})
            task = created["taskId"]
            first = await rpc.status(task, "input_required")
            undeclared = await Rpc(http, url, tasks=False).error("tasks/get", taskId=task)
            plain = await Rpc(http, url, tasks=False).call("tools/call", name="shop", arguments={"message": "hi"})
        async with running_gateway(client, task_queue, **OPTIONS) as url:  # a new gateway process
            rpc = Rpc(http, url)
            second = await rpc.call("tasks/get", taskId=task)
            (key, form), = second["inputRequests"].items()
            ack = await rpc.call("tasks/update", taskId=task, inputResponses={
                key: {"action": "accept", "content": {"answer": "A-17"}}, "unknown-key": {"action": "decline"}})
            done = await rpc.status(task, "completed")
            unknown = await rpc.error("tasks/get", taskId="shop-nothing::1")
            malformed = await rpc.error("tasks/get", taskId="no separator")
            wrong_type = await rpc.error("tasks/get", taskId=5)
            no_list = await rpc.error("tasks/list")

    assert created["resultType"] == "task" and created["status"] in ("working", "input_required")
    assert set(created) >= {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert "result" not in created and task.endswith("::1")
    assert first["inputRequests"] == second["inputRequests"] and first["statusMessage"] == "[shop] Which order?"
    assert form["method"] == "elicitation/create" and form["params"]["message"] == "[shop] Which order?"
    assert ack["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "Refund started for order A-17."
    assert done["result"]["structuredContent"]["status"] == "completed" and not done["result"]["isError"]
    assert undeclared["code"] == -32021
    assert undeclared["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    assert plain["content"][0]["text"] == "you said 'hi'"  # no extension declared: no task
    assert unknown == {"code": -32602, "message": "no task 'shop-nothing::1'"}
    assert malformed == {"code": -32602, "message": "no task 'no separator'"}
    assert wrong_type["code"] == -32602
    assert no_list["code"] == -32601  # the extension has no tasks/list


async def test_a_task_waiting_for_a_person_reads_from_its_memo_while_no_worker_runs_and_takes_the_answer_after(
        client: Client, task_queue: str) -> None:
    async with httpx.AsyncClient() as http, running_gateway(client, task_queue, busy_seconds=1, **OPTIONS) as url:
        rpc = Rpc(http, url)
        async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
            task = (await rpc.call("tools/call", name="shop", arguments={"message": "refund"}))["taskId"]
            await rpc.status(task, "input_required")
        no_worker = await rpc.call("tasks/get", taskId=task)  # the worker is gone: the memo answers
        (key, _), = no_worker["inputRequests"].items()
        answer = {key: {"action": "accept", "content": {"answer": "E-5"}}}
        not_taken = await rpc.error("tasks/update", taskId=task, inputResponses=answer)
        async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
            await rpc.call("tasks/update", taskId=task, inputResponses=answer)  # ignored if the first got in
            done = await rpc.status(task, "completed")

    assert no_worker["status"] == "input_required" and no_worker["statusMessage"] == "[shop] Which order?"
    assert not_taken["code"] == -32603 and not_taken["message"].startswith("no worker took the answer")
    assert done["result"]["content"][0]["text"] == "Refund started for order E-5."


async def test_the_2025_11_25_form_a_task_field_tasks_result_and_tasks_list(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), httpx.AsyncClient() as http:
        async with running_gateway(client, task_queue, **OPTIONS) as url:
            rpc = Rpc(http, url, version=LEGACY)
            tools = await rpc.call("tools/list")
            created = await rpc.call("tools/call", name="shop", arguments={"message": "refund"}, task={"ttl": 60000})
            task = created["task"]["taskId"]
            waiting = await rpc.call("tasks/result", taskId=task)
            (key, _), = waiting["inputRequests"].items()
            result = await rpc.call("tasks/result", taskId=task, inputResponses={
                key: {"action": "accept", "content": {"answer": "B-2"}}})
            got = await rpc.call("tasks/get", taskId=task)
            listed = await rpc.call("tasks/list")
            cursor = await rpc.error("tasks/list", cursor="elsewhere")

    assert tools["tools"][0]["execution"] == {"taskSupport": "optional"}
    assert created["task"]["status"] in ("working", "input_required") and created["task"]["ttl"] is None
    assert waiting["resultType"] == "input_required" and waiting["requestState"] == task
    assert result["content"][0]["text"] == "Refund started for order B-2."
    assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task}}
    assert got["status"] == "completed" and got["pollInterval"] == 1000
    assert task in [t["taskId"] for t in listed["tasks"]]
    assert cursor["code"] == -32602


async def test_the_sdk_clients_typed_task_requests_over_the_servers_own_transport(client: Client, task_queue: str) -> None:
    """What `durable-teams mcp` serves over stdio: the same server, the SDK's typed requests (its
    client holds a tools/call result to CallToolResult's shape, so it cannot take a task from
    tools/call: the turn here is a plain call's, found as a task by its id)."""
    door = McpDoor(Gateway(client, task_queue, poll_seconds=0.05, teams=["shop"]), {"shop": "Refunds."})
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)):
        async with McpClient(door.server(), mode="legacy") as mcp:
            capabilities = mcp.session.server_capabilities
            called = await mcp.call_tool("shop", {"message": "hello"})
            task = f"{called.structured_content['thread_id']}::1"  # type: ignore[index]
            payload = await mcp.session.send_request(types.GetTaskPayloadRequest(
                params=types.GetTaskPayloadRequestParams(task_id=task)), types.CallToolResult)
            got = await mcp.session.send_request(types.GetTaskRequest(
                params=types.GetTaskRequestParams(task_id=task)), types.GetTaskResult)
            listed = await mcp.session.send_request(types.ListTasksRequest(), TypeAdapter(types.ListTasksResult))

    assert capabilities is not None and capabilities.tasks is not None and capabilities.tasks.cancel is not None
    assert payload.content[0].text == "you said 'hello'"  # type: ignore[union-attr]
    assert got.status == "completed" and got.task_id == task
    assert task in [t.task_id for t in listed.tasks]


async def test_cancel_stops_the_turn_and_tells_the_tool(client: Client, task_queue: str) -> None:
    GATE["started"], GATE["open"] = asyncio.Event(), asyncio.Event()
    TOLD.clear()
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), httpx.AsyncClient() as http:
        async with running_gateway(client, task_queue, **OPTIONS) as url:
            rpc, legacy = Rpc(http, url), Rpc(http, url, version=LEGACY)
            task = (await rpc.call("tools/call", name="shop", arguments={"message": "track"}))["taskId"]
            await asyncio.wait_for(GATE["started"].wait(), 30)
            working = await rpc.call("tasks/get", taskId=task)
            ack = await rpc.call("tasks/cancel", taskId=task)
            cancelled = await rpc.status(task, "cancelled")
            again = await legacy.error("tasks/cancel", taskId=task)
            thread = task.rpartition("::")[0]
            following = await rpc.call("tools/call", name="shop", arguments={"message": "thanks", "thread_id": thread})
            as_legacy = await legacy.call("tools/call", name="shop", arguments={"message": "track", "thread_id": thread},
                                          task={})
            second = as_legacy["task"]["taskId"]
            await legacy.status(second, "working")
            stopped = await legacy.call("tasks/cancel", taskId=second)

    assert working["status"] == "working" and ack == {"resultType": "complete", "_meta": ack["_meta"]}
    assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled
    assert again["code"] == -32602 and "has ended" in again["message"]
    assert following["taskId"] == f"{thread}::2"
    assert second == f"{thread}::3" and stopped["status"] == "cancelled"
    assert TOLD == ["4711", "4711"]


async def test_a_scoped_token_sees_only_the_threads_and_tasks_it_started(client: Client, task_queue: str) -> None:
    tokens = [Token("tok-a", "a"), Token("tok-b", "b"), Token("tok-op")]
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), httpx.AsyncClient() as http:
        async with running_gateway(client, task_queue, tokens=tokens, **OPTIONS) as url:
            a, b, op = (Rpc(http, url, token) for token in ("tok-a", "tok-b", "tok-op"))
            b_legacy = Rpc(http, url, "tok-b", version=LEGACY)
            task = (await a.call("tools/call", name="shop", arguments={"message": "refund"}))["taskId"]
            thread = task.rpartition("::")[0]
            await a.status(task, "input_required")
            seen_by_b = await b.error("tasks/get", taskId=task)
            cancel_by_b = await b.error("tasks/cancel", taskId=task)
            update_by_b = await b.error("tasks/update", taskId=task, inputResponses={})
            missing = await b.error("tasks/get", taskId=f"{thread}x::1")
            b_call = await Rpc(http, url, "tok-b", tasks=False).call(
                "tools/call", name="shop", arguments={"message": "x", "thread_id": thread})
            b_call_missing = await Rpc(http, url, "tok-b", tasks=False).call(
                "tools/call", name="shop", arguments={"message": "x", "thread_id": f"{thread}x"})
            listed_by_b = await b_legacy.call("tasks/list")
            listed_by_a = await Rpc(http, url, "tok-a", version=LEGACY).call("tasks/list")
            seen_by_op = await op.call("tasks/get", taskId=f"a:{task}")  # an operator names the workflow

    assert seen_by_b == cancel_by_b == update_by_b == {"code": -32602, "message": f"no task {task!r}"}
    assert missing == {"code": -32602, "message": f"no task '{thread}x::1'"}
    assert b_call["isError"] and b_call["content"][0]["text"] == f"no thread {thread}"
    assert b_call_missing["content"][0]["text"] == f"no thread {thread}x"
    assert task not in [t["taskId"] for t in listed_by_b["tasks"]]
    assert task in [t["taskId"] for t in listed_by_a["tasks"]]
    assert seen_by_op["status"] == "input_required"


BAD_BODIES = [
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]', -32600, None),
    (b"[]", -32600, None),
    (b'"tools/list"', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', -32700, None),
    (b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 9007199254740992, "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "tools/list"}', -32700, None),
    (b'{"jsonrpc": "2.0", "id": "' + b"x" * 201 + b'", "method": "tools/list"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}', -32602, 1),
    (b'{"jsonrpc": "2.0", "id": 1}', -32600, 1),
]


async def test_bad_json_rpc_gets_the_protocol_error_object(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, **OPTIONS) as url, httpx.AsyncClient() as http:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": LEGACY}
        answers = [await http.post(f"{url}/mcp", content=body, headers=headers) for body, _, _ in BAD_BODIES]
        stream = await http.get(f"{url}/mcp", headers=headers, timeout=10)  # no stream held open: stateless
        rpc = Rpc(http, url, version=LEGACY)
        typed = [await rpc.error("tasks/get"), await rpc.error("tasks/get", taskId=["x"]),
                 await rpc.error("tasks/update", taskId="x::1", inputResponses="yes"),
                 await rpc.error("tasks/cancel", taskId="x" * 5000), await rpc.error("tasks/result", taskId=None)]

    for (body, code, request_id), answer in zip(BAD_BODIES, answers, strict=True):
        assert answer.status_code == 400, body[:60]
        assert answer.json() == {"jsonrpc": "2.0", "id": request_id,
                                 "error": {"code": code, "message": answer.json()["error"]["message"]}}
    assert [e["code"] for e in typed] == [-32602] * 5
    assert stream.status_code == 405 and stream.headers["allow"] == "POST"


async def test_calls_that_wait_for_a_team_count_against_the_callers_streams(client: Client, task_queue: str) -> None:
    GATE["started"], GATE["open"] = asyncio.Event(), asyncio.Event()
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), httpx.AsyncClient() as http:
        async with running_gateway(client, task_queue, limits=Limits(max_followers=1), **OPTIONS) as url:
            rpc = Rpc(http, url, tasks=False)
            waiting = asyncio.ensure_future(rpc.call("tools/call", name="shop", arguments={"message": "track"}))
            await asyncio.wait_for(GATE["started"].wait(), 30)
            refused = await rpc.post("tools/call", {"name": "shop", "arguments": {"message": "hi"}})
            listed = await rpc.call("tools/list")  # not a stream: served
            GATE["open"].set()
            answered = await waiting

    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["message"].startswith("too many open streams")
    assert [t["name"] for t in listed["tools"]] == ["shop"]
    assert answered["content"][0]["text"] == "order 4711: shipped"
