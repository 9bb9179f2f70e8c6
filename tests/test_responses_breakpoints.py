"""Breakpoints through the Responses API door: a tool call paused at a breakpoint (before it
runs, or after it ran) ends its response as an `mcp_approval_request`, as a tool that needs
approval does; an `mcp_approval_response` (or a clear yes or no) resumes or stops it. The
refund runs exactly once when resumed, never when stopped."""

from __future__ import annotations

import openai
import pytest
from temporalio.client import Client

from durable_teams.client.approvals import ASK_AGAIN
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .time_travel_team import REFUNDS, execute_refund, support_model

pytestmark = [pytest.mark.workflow, pytest.mark.slow]  # a gateway

BEFORE = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
               name="bp-before", interrupt_before=["execute_refund"]).compile()
AFTER = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
              name="bp-after", interrupt_after=["execute_refund"]).compile()


@pytest.fixture(autouse=True)
def no_refunds() -> None:
    REFUNDS.clear()


def approvals(response: object) -> list[object]:
    return [i for i in response.output if i.type == "mcp_approval_request"]  # type: ignore[attr-defined]


async def test_a_breakpoint_before_the_refund_resumed_and_stopped(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [BEFORE], ScriptedModel(support_model)), \
            running_gateway(client, task_queue, tokens=["t1"], teams=["bp-before"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t1", max_retries=0)
        first = await ai.responses.create(model="bp-before", input="refund A1")
        [asked] = approvals(first)
        assert (first.status, asked.name, asked.arguments) == (  # type: ignore[attr-defined]
            "completed", "execute_refund", '{"order": "A1"}')
        assert "breakpoint" in first.output_text and REFUNDS == {}
        # read strictly: neither yes nor no sends nothing, and the question is asked again
        unclear = await ai.responses.create(model="bp-before", input="yes if it is under $20",
                                            previous_response_id=first.id)
        assert unclear.id == first.id and unclear.output_text.startswith(ASK_AGAIN) and REFUNDS == {}
        resumed = await ai.responses.create(model="bp-before", previous_response_id=first.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}])  # type: ignore[attr-defined]
        assert (resumed.status, resumed.output_text) == ("completed", "done: refunded A1")
        assert REFUNDS == {"A1": 1}
        again = await ai.responses.retrieve(first.id)  # the paused response stays as it ended
        assert (again.status, again.output_text, [a.id for a in approvals(again)]) == (  # type: ignore[attr-defined]
            "completed", first.output_text, [asked.id])  # type: ignore[attr-defined]

        second = await ai.responses.create(model="bp-before", input="refund B2", previous_response_id=resumed.id)
        [stop] = approvals(second)
        stopped = await ai.responses.create(model="bp-before", previous_response_id=second.id, input=[
            {"type": "mcp_approval_response", "approval_request_id": stop.id, "approve": False,  # type: ignore[attr-defined]
             "reason": "wrong order"}])
        assert stopped.output_text == (
            "done: The user stopped execute_refund at a breakpoint: wrong order. It was not run.")
    assert REFUNDS == {"A1": 1}


async def test_a_breakpoint_after_the_refund_shows_it_ran_once(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [AFTER], ScriptedModel(support_model)), \
            running_gateway(client, task_queue, tokens=["t1"], teams=["bp-after"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="t1", max_retries=0)
        first = await ai.responses.create(model="bp-after", input="refund C3")
        [asked] = approvals(first)
        assert (first.status, asked.name, REFUNDS) == ("completed", "execute_refund", {"C3": 1})  # type: ignore[attr-defined]
        resumed = await ai.responses.create(model="bp-after", input="yes", previous_response_id=first.id)
        assert (resumed.status, resumed.output_text) == ("completed", "done: refunded C3")
        second = await ai.responses.create(model="bp-after", input="refund D4", previous_response_id=resumed.id)
        stopped = await ai.responses.create(model="bp-after", input="no", previous_response_id=second.id)
        assert stopped.status == "cancelled" and "stopped support at a breakpoint after execute_refund" \
            in stopped.output_text
    assert REFUNDS == {"C3": 1, "D4": 1}
