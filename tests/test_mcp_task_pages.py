"""MCP `tasks/list` (2025-11-25) a page at a time: an opaque `nextCursor` that a thread started
meanwhile does not shift, a cursor not made here refused with invalid params, and an encrypted
conversation on the gateway's task queue (whose memo this gateway cannot read) left out
instead of failing the list."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import uuid
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client as McpClient
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter
from temporalio.client import Client
from temporalio.service import RPCError

from durable_teams.client.connection import connect
from durable_teams.gateway.core.team_cards import TeamCard
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.mcp.door import McpDoor
from durable_teams.gateway.doors.mcp.task_pages import BadCursor, Cursor
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, echo

pytestmark = pytest.mark.workflow

LISTED = TypeAdapter(types.ListTasksResult)


def test_a_cursor_is_opaque_and_only_one_made_here_is_taken() -> None:
    cursor = Cursor(b"\x00temporal's token\xff", 7, "a-run-id")
    assert Cursor.decode(cursor.encode()) == cursor and Cursor.decode(Cursor().encode()) == Cursor()
    assert "temporal" not in cursor.encode()
    forged = [json.dumps({"p": "", "i": 7}), "dt1.", "dt1.!!!", "dt1." + "A" * 5000, "",
              "dt1." + base64.urlsafe_b64encode(b'{"p": "", "i": -1, "r": ""}').decode(),
              "dt1." + base64.urlsafe_b64encode(b'{"p": "", "i": true, "r": ""}').decode(),
              "dt1." + base64.urlsafe_b64encode(b'{"p": "%%", "i": 1, "r": ""}').decode(),
              "dt1." + base64.urlsafe_b64encode(b'{"i": 1, "r": ""}').decode(),
              "dt1." + base64.urlsafe_b64encode(b'[1, 2]').decode()]
    for text in forged:
        with pytest.raises(BadCursor, match="no such cursor"):
            Cursor.decode(text)


async def started(mcp: McpClient, text: str) -> str:
    called = await mcp.call_tool("echo", {"message": text})
    return f"{called.structured_content['thread_id']}::1"  # type: ignore[index]


async def page(mcp: McpClient, cursor: str | None = None) -> types.ListTasksResult:
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    return await mcp.session.send_request(types.ListTasksRequest(params=params), LISTED)


async def test_tasks_list_pages_with_a_cursor_that_new_threads_do_not_shift(client: Client, task_queue: str) -> None:
    door = McpDoor(Gateway(client, task_queue, poll_seconds=0.05, teams=["echo"]), {"echo": "Echoes."})
    door.tasks.page_size = 2
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)):
        async with McpClient(door.server(), mode="legacy") as mcp:
            tasks = [await started(mcp, f"hello {n}") for n in range(3)]
            first = await page(mcp)
            later = await started(mcp, "after the first page")  # newest: before the cursor
            second = await page(mcp, first.next_cursor)
            whole = await page(mcp, Cursor().encode())  # a cursor at the start: the first page
            with pytest.raises(MCPError) as bad:
                await page(mcp, "dt1.not-ours")

    assert [t.task_id for t in first.tasks] == [tasks[2], tasks[1]] and first.next_cursor
    assert [t.task_id for t in second.tasks] == [tasks[0]] and second.next_cursor is None
    assert [t.task_id for t in whole.tasks] == [later, tasks[2]]
    assert bad.value.error.code == types.INVALID_PARAMS and "no such cursor" in bad.value.error.message


async def legacy_list(http: httpx.AsyncClient, url: str, **params: Any) -> dict[str, Any]:
    response = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tasks/list",
                                                  "params": params},
                               headers={"Accept": "application/json, text/event-stream",
                                        "MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tasks/list"})
    body: dict[str, Any] = response.json()
    return body


async def test_an_encrypted_conversation_on_the_queue_is_left_out_of_tasks_list(client: Client, task_queue: str) -> None:
    key = base64.b64encode(os.urandom(32)).decode()
    sealed = await connect(client.service_client.config.target_host, encryption=f"k1:{key}")
    secret = await sealed.start_workflow(TeamWorkflow.run, ConversationInput(team=TEAM.spec, task="PANGOLIN secret"),
                                         id=f"echo-sealed-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
                                         memo={"team": "echo"})
    options: dict[str, Any] = {"teams": ["echo"], "cards": [TeamCard("echo", "Echoes.", ())]}
    try:
        async with running_worker(client, task_queue, [TEAM], ScriptedModel(echo)), httpx.AsyncClient() as http, \
                running_gateway(client, task_queue, **options) as url:
            call = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"message": "plain hello"}}},
                headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
                         "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
            thread = call.json()["result"]["structuredContent"]["thread_id"]
            listed = await legacy_list(http, url)
            forged = await legacy_list(http, url, cursor="dt1.eyJwIjoiQUFBQSIsImkiOjB9")  # Temporal refuses its token
            not_ours = await legacy_list(http, url, cursor="page-2")
            mistyped = await legacy_list(http, url, cursor=5)
            on_queue = [wf async for wf in client.list_workflows(f"TaskQueue = '{task_queue}'")]
    finally:
        with contextlib.suppress(RPCError):  # a worker without the key may have failed it already
            await secret.terminate("test over")

    assert secret.id in [wf.id for wf in on_queue]  # what made the list fail once:
    with pytest.raises(Exception, match="encrypt"):  # a memo the gateway's client cannot decode
        await next(wf for wf in on_queue if wf.id == secret.id).memo()
    assert [t["taskId"] for t in listed["result"]["tasks"]] == [f"{thread}::1"]
    assert "nextCursor" not in listed["result"]
    assert "PANGOLIN" not in json.dumps(listed)
    for refused in (forged, not_ours, mistyped):
        assert refused["error"]["code"] == -32602, refused
