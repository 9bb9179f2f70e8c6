"""An answer the model cut off (`finish_reason="length"`) or its content filter stopped is
never a silent "completed": `TurnReply`, the `status` query and `ConversationResult` say
"truncated" / "filtered". And a tool handing the conversation to an agent that does not exist
(`Result(agent=...)`) tells the model so, with the list of agents."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio.client import Client

from durable_teams.activities.tool_results import Result
from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker
from .teams import TEAM, finishing

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize(("finish_reason", "status"), [
    ("length", "truncated"), ("content_filter", "filtered"), ("stop", "completed"), ("eos", "completed"),
])
@pytest.mark.slow  # over a second: out of the quick loop
async def test_flagged_finish_reasons_reach_reply_status_and_result(
    client: Client, task_queue: str, finish_reason: str, status: str
) -> None:
    async with running_worker(client, task_queue, [TEAM], ScriptedModel(finishing)):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, single_turn=False),
            id=f"flag-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        reply = await send_turn(client, handle.id, finish_reason)
        seen = await handle.query(TeamWorkflow.status)
        await handle.signal(TeamWorkflow.close)
        result = await handle.result()
        one_shot = await client.execute_workflow(
            TeamWorkflow.run, ConversationInput(team=TEAM.spec, task=finish_reason),
            id=f"flag-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    assert (reply.text, reply.status) == ("partial answer", status)
    assert seen.last_reply is not None and seen.last_reply.status == status
    assert (result.answer, result.status) == ("partial answer", status)
    assert (one_shot.answer, one_shot.status) == ("partial answer", status)


def send_to_nobody() -> Result:
    """Find someone to help."""
    return Result(value="Looking for help.", agent="nobody")


def frontdesk_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    return say(f"tool said: {last['content']}") if last["role"] == "tool" else call("send_to_nobody")


async def test_result_naming_an_unknown_agent_tells_the_model(client: Client, task_queue: str) -> None:
    frontdesk = Agent("frontdesk", "Help.", tools=[send_to_nobody])
    team = Swarm([frontdesk, Agent("billing", "Bill.")]).compile()
    model = ScriptedModel(frontdesk_script)
    async with running_worker(client, task_queue, [team], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
            id=f"nobody-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        reply = await send_turn(client, handle.id, "help me")
        status = await handle.query(TeamWorkflow.status)
        full = await handle.query(TeamWorkflow.transcript, True)
    note = ("Looking for help.\n\nError: there is no agent named 'nobody', so the conversation "
            "was not handed over. Agents: frontdesk, billing.")
    (tool_message,) = [m for m in full if m.role == "tool"]
    assert (tool_message.content, tool_message.kind) == (note, "error")
    assert (reply.agent, reply.text, reply.status) == ("frontdesk", f"tool said: {note}", "completed")
    assert status.active_agent == "frontdesk"
    assert [r[0].agent for r in model.requests] == ["frontdesk", "frontdesk"]
