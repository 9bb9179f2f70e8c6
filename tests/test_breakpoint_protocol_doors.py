"""Breakpoints through the protocol doors: before the refund, MCP asks an approval elicitation
and A2A puts the task in input-required, each naming the call and its arguments; resumed the
refund runs once, stopped it never runs."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import mcp_types as types
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from mcp.client.client import Client as McpClient
from temporalio.client import Client

from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.mcp.door import McpDoor
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .time_travel_team import REFUNDS, execute_refund, support_model

pytestmark = pytest.mark.workflow

TEAM = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
             name="bp-mcp", interrupt_before=["execute_refund"]).compile()


async def test_a_breakpoint_before_the_refund_is_an_approval_elicitation(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    asked: list[tuple[str, dict[str, Any]]] = []
    decisions = iter([True, False])

    async def person(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append((params.message, params.requested_schema))  # type: ignore[union-attr]
        return types.ElicitResult(action="accept", content={"approved": next(decisions)})

    gw = Gateway(client, task_queue, poll_seconds=0.05, teams=["bp-mcp"])
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(support_model)):
        async with McpClient(McpDoor(gw, {"bp-mcp": "Refunds."}).server(), elicitation_callback=person) as mcp:
            resumed = await mcp.call_tool("bp-mcp", {"message": "refund A1"})
            thread = resumed.structured_content["thread_id"]  # type: ignore[index]
            stopped = await mcp.call_tool("bp-mcp", {"message": "refund B2", "thread_id": thread})
    assert [m for m, _ in asked] == [
        '[support] At a breakpoint before execute_refund({"order": "A1"}). Resume? Reply yes or no.',
        '[support] At a breakpoint before execute_refund({"order": "B2"}). Resume? Reply yes or no.']
    assert all("approved" in schema["properties"] for _, schema in asked)
    assert resumed.content[0].text == "done: refunded A1"  # type: ignore[union-attr]
    assert stopped.content[0].text == (  # type: ignore[union-attr]
        "done: The user stopped execute_refund at a breakpoint: no. It was not run.")  # the answer is its reason
    assert REFUNDS == {"A1": 1}


A2A_TEAM = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 name="bp-a2a", interrupt_before=["execute_refund"]).compile()
TOKEN = {"Authorization": "Bearer s3cret"}


def message(text: str, **ids: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                                    parts=[pb.Part(text=text)], **ids))


async def send(agent: Any, request: pb.SendMessageRequest) -> pb.Task:
    tasks = [event.task async for event in agent.send_message(request) if event.HasField("task")]
    return tasks[-1]


@pytest.mark.slow  # a gateway
async def test_a_breakpoint_before_the_refund_is_an_input_required_task(client: Client, task_queue: str) -> None:
    REFUNDS.clear()
    options: dict[str, Any] = {"tokens": ["s3cret"], "cards": [card_of(A2A_TEAM.spec)]}
    async with running_worker(client, task_queue, [A2A_TEAM], ScriptedModel(support_model)), \
            running_gateway(client, task_queue, **options) as url:
        http = httpx.AsyncClient(headers=TOKEN, timeout=60)
        agent = await create_client(f"{url}/a2a/bp-a2a", ClientConfig(streaming=False, httpx_client=http),
                                    resolver_http_kwargs={"headers": TOKEN})
        asked = await send(agent, message("refund A1"))
        unclear = await send(agent, message("yes if it is small", task_id=asked.id, context_id=asked.context_id))
        resumed = await send(agent, message("yes", task_id=asked.id, context_id=asked.context_id))
        second = await send(agent, message("refund B2", context_id=asked.context_id))
        stopped = await send(agent, message("no", task_id=second.id, context_id=asked.context_id))
        await http.aclose()
    assert asked.status.state == unclear.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert asked.status.message.parts[0].text == (
        '[support] At a breakpoint before execute_refund({"order": "A1"}). Resume? Reply yes or no.')
    assert resumed.status.state == pb.TASK_STATE_COMPLETED
    assert resumed.status.message.parts[0].text == "done: refunded A1"
    assert second.status.state == pb.TASK_STATE_INPUT_REQUIRED and stopped.status.state == pb.TASK_STATE_COMPLETED
    assert stopped.status.message.parts[0].text == "done: The user stopped execute_refund at a breakpoint: no. It was not run."
    assert REFUNDS == {"A1": 1}
