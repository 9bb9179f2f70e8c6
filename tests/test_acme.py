"""The Swarm cookbook's ACME team: handoff tools carry the cookbook's cues, and triage can
escalate to a person with `escalate_to_human`."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from durable_teams import Agent, Swarm, handoff
from durable_teams.client.send import send_turn
from durable_teams.examples import acme
from durable_teams.worker.scripted import ScriptedModel, call
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.roster import agent_tools
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow


def described(team: Swarm, agent: str) -> dict[str, str]:
    return {t.name: t.description for t in agent_tools(team.compile().spec, agent)}


def test_hand_back_tools_say_when_to_use_them() -> None:
    team = acme.build()
    for agent in ("sales", "repairs"):
        assert described(team, agent)["transfer_back_to_triage"] == (
            "Call this if the user brings up a topic outside of your purview, including "
            "escalating to human.")
    triage = described(team, "triage")
    assert triage == {
        "escalate_to_human": "Only call this if explicitly asked to.",
        "transfer_to_sales_agent": "Anything sales or buying related.",  # the target's description
        "transfer_to_issues_and_repairs": "Issues, repairs, or refunds.",
    }


def test_a_handoff_keeps_the_default_name_when_only_described() -> None:
    a = Agent("a", handoffs=[handoff("b", description="When b is needed.")])
    tools = described(Swarm([a, Agent("b", description="B.")]), "a")
    assert tools == {"transfer_to_b": "When b is needed."}


async def test_triage_escalates_to_a_human_as_the_cookbook_does(client: Client, task_queue: str) -> None:
    acme.ESCALATIONS.clear()
    compiled = acme.build().compile()
    model = ScriptedModel({"triage": [call("escalate_to_human", summary="Customer asks for a manager.")]})
    async with running_worker(client, task_queue, [compiled], model):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=compiled.spec, single_turn=False),
            id=f"acme-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        reply = await send_turn(client, handle.id, "Get me a human, now.")
    assert (reply.agent, reply.text) == (
        "triage", "Escalating to a human agent. Summary: Customer asks for a manager.")
    assert acme.ESCALATIONS == ["Customer asks for a manager."]
    assert len(model.requests) == 1  # return_direct: no model call after the tool
