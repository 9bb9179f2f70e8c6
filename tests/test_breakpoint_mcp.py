"""Breakpoints through the MCP door: a breakpoint before the refund is asked as an approval
elicitation naming the call and its arguments; accepted it runs once, declined it never runs."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.client.client import Client as McpClient
from temporalio.client import Client

from durable_teams.gateway.mcp_door import McpDoor
from durable_teams.gateway.threads import Gateway
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
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
