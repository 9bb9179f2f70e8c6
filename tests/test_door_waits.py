"""Every door waits for a turn one way (`Exchanges.turn_changes`,
durable_teams/gateway/core/exchanges.py): an A2A stream and an MCP task's `tasks/result` hold
the `turn_outcome` update while the model answers, and ask the workflow nothing on a timer
meanwhile (they used to query its status every `poll_seconds`)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_teams.gateway.core.team_cards import card_of

from .conftest import running_worker
from .counting import counted
from .gateway_helpers import running_gateway
from .teams import TEAM, GatedModel
from .waiting import until

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway of its own


async def outcome_waited(client: Client, thread: str) -> bool:
    """Whether the thread's history has a `turn_outcome` update accepted."""
    history = await client.get_workflow_handle(thread).fetch_history()
    return any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
               and e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
               == "turn_outcome" for e in history.events)


async def test_an_a2a_stream_waits_for_its_turn_with_the_update(client: Client, task_queue: str) -> None:
    gateway_client, queries = counted(client)
    model = GatedModel()
    frames: list[dict[str, Any]] = []
    async with running_worker(client, task_queue, [TEAM], model), httpx.AsyncClient(timeout=60) as http:
        async with running_gateway(gateway_client, task_queue, cards=[card_of(TEAM.spec)]) as url:
            message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hello"}]}
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
            async with http.stream("POST", f"{url}/a2a/echo", json=body, headers={"A2A-Version": "1.0"}) as stream:
                lines = stream.aiter_lines()
                async for line in lines:
                    if line.startswith("data:"):
                        frames.append(json.loads(line[5:])["result"])
                        break
                thread = frames[0]["task"]["contextId"]
                await until(lambda: outcome_waited(client, thread), "the stream waits with turn_outcome")
                asked_while_held = queries.asked["status"]
                model.gate.set()
                frames += [json.loads(line[5:])["result"] async for line in lines if line.startswith("data:")]

    assert frames[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert [f["statusUpdate"]["status"]["state"] for f in frames[1:]] == ["TASK_STATE_COMPLETED"]
    assert frames[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "heard: hello"
    assert asked_while_held == 2  # the thread's when the message went in, the task's before the wait
    assert queries.asked["status"] == asked_while_held + 1  # and the task read at its outcome


async def test_an_mcp_task_result_waits_for_its_turn_with_the_update(client: Client, task_queue: str) -> None:
    gateway_client, queries = counted(client)
    model = GatedModel()
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

    async def rpc(http: httpx.AsyncClient, url: str, method: str, **params: Any) -> dict[str, Any]:
        answer = (await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                      "params": params}, headers=headers)).json()
        assert "result" in answer, answer
        return dict(answer["result"])
    async with running_worker(client, task_queue, [TEAM], model), httpx.AsyncClient(timeout=60) as http:
        async with running_gateway(gateway_client, task_queue, teams=["echo"], cards=[card_of(TEAM.spec)]) as url:
            created = await rpc(http, url, "tools/call", name="echo", arguments={"message": "hello"},
                                task={"ttl": 60000})
            assert "task" in created, created
            task = created["task"]["taskId"]
            thread = task.rsplit("::", 1)[0]
            before = queries.asked["status"]
            result = http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                                                   "params": {"taskId": task}}, headers=headers)
            waiting = asyncio.ensure_future(result)
            await until(lambda: outcome_waited(client, thread), "tasks/result waits with turn_outcome")
            asked_while_held = queries.asked["status"] - before
            model.gate.set()
            answer = (await waiting).json()["result"]

    assert answer["structuredContent"]["text"] == "heard: hello"
    assert asked_while_held == 0  # it checked the caller sees the task (a description), then waited
    # the task's result built from the reply the wait told: no read at its outcome either
    assert queries.asked["status"] - before == 0
