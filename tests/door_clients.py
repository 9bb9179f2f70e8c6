"""Clients of the gateway's A2A and MCP doors for tests that walk every door
(tests/test_tenancy.py): an A2A client with a token, and raw JSON-RPC to /mcp."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb

MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def a2a_message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def a2a_agent(url: str, token: str, team: str, streaming: bool = False) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    return await create_client(f"{url}/a2a/{team}", ClientConfig(
        streaming=streaming, httpx_client=httpx.AsyncClient(headers=headers, timeout=60)),
        resolver_http_kwargs={"headers": headers})


async def a2a_send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    return [event.task async for event in agent.send_message(request) if event.HasField("task")][-1]


async def refusal(call: Any) -> str:
    """The error a call raises (its message), or AssertionError when it does not."""
    try:
        await call
    except Exception as err:  # noqa: BLE001 - the client's error, its message compared
        return str(err)
    raise AssertionError("not refused")


class McpRpc:
    """Raw JSON-RPC to /mcp (protocol 2026-07-28): `call` returns the result, `error` the error
    object; `tasks` declares the tasks extension (a tools/call is then a task)."""

    def __init__(self, http: httpx.AsyncClient, url: str, token: str, tasks: bool = True) -> None:
        self.http, self.url, self.tasks = http, url, tasks
        self.headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
                        "Authorization": f"Bearer {token}"}

    async def post(self, method: str, params: dict[str, Any]) -> httpx.Response:
        caps = {"extensions": {TASKS_EXTENSION: {}}} if self.tasks else {}
        params = params | {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                     "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                                     "io.modelcontextprotocol/clientCapabilities": caps}}
        name = params.get("taskId", params.get("name"))  # the routing header (SEP-2663)
        headers = self.headers | {"Mcp-Method": method} | ({"Mcp-Name": name} if isinstance(name, str) else {})
        return await self.http.post(f"{self.url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                                             "params": params}, headers=headers)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        body = (await self.post(method, params)).json()
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def error(self, method: str, **params: Any) -> dict[str, Any]:
        body = (await self.post(method, params)).json()
        assert "error" in body, body
        found: dict[str, Any] = body["error"]
        return found
