"""The MCP door exact to its protocol (issue 49, item 7): one id per task (`::01` is no alias
of `::1`), and a client of an earlier revision that declares elicitation asked by
`elicitation/create` over HTTP, as over stdio (its session kept by the gateway)."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import Client

from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.messages import ModelRequest

from .conftest import running_worker
from .gateway_helpers import running_gateway

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def shop_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return say(f"Refund started for order {last['content']}.")
    if last["content"] == "refund":
        return call("ask_human", question="Which order?")
    return say(f"you said {last['content']!r}")


SHOP = Swarm([Agent("shop", "Help.", tools=["ask_human"])], name="shop").compile()
OPTIONS: dict[str, Any] = {"tokens": ["s3cret"], "teams": ["shop"], "cards": [TeamCard("shop", "Refunds.", ())]}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


def client_over_http(url: str, **options: Any) -> McpClient:
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=60)
    return McpClient(streamable_http_client(f"{url}/mcp", http_client=http), **options)


async def test_a_client_declaring_elicitation_is_asked_over_http(client: Client, task_queue: str) -> None:
    asked: list[str] = []

    async def person(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "B-2"})

    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), \
            running_gateway(client, task_queue, **OPTIONS) as url:
        async with client_over_http(url, mode="legacy", elicitation_callback=person) as mcp:
            elicited = await mcp.call_tool("shop", {"message": "refund"})
        async with client_over_http(url, mode="legacy") as mcp:  # no elicitation: the text asks
            told = await mcp.call_tool("shop", {"message": "refund"})
    assert asked == ["[shop] Which order?"]
    assert elicited.content[0].text == "Refund started for order B-2."  # type: ignore[union-attr]
    assert told.structured_content is not None and told.structured_content["status"] == "input_required"


async def test_a_task_answers_to_one_id_only(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [SHOP], ScriptedModel(shop_script)), \
            running_gateway(client, task_queue, **OPTIONS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={
                "Authorization": "Bearer s3cret", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MODERN}) as http:
        async def rpc(method: str, **params: Any) -> dict[str, Any]:
            name = str(params.get("taskId", params.get("name")))
            answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                                   "params": params | {"_meta": META}},
                                     headers={"Mcp-Method": method} | ({"Mcp-Name": name} if name.isascii() and name == name.strip() else {}))
            body: dict[str, Any] = answer.json()
            return body
        created = await rpc("tools/call", name="shop", arguments={"message": "refund"})
        task = created["result"]["taskId"]
        assert task.endswith("::1")
        assert "result" in await rpc("tasks/get", taskId=task)
        for alias in (task[:-1] + "01", task[:-1] + "１", task + " "):
            got = await rpc("tasks/get", taskId=alias)
            assert "no task" in got["error"]["message"], (alias, got)
            cancelled = await rpc("tasks/cancel", taskId=alias)
            assert "no task" in cancelled["error"]["message"], (alias, cancelled)
        assert (await rpc("tasks/get", taskId=task))["result"]["status"] == "input_required"
