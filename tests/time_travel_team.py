"""The support team of the time travel tests: a counting scripted model's script and a refund
tool that is not idempotent, counted."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from temporalio.client import Client, WorkflowHandle

from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, CompiledTeam, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

REFUNDS: Counter[str] = Counter()
"""Refunds paid, by order id: the tool is not idempotent, so a second run pays twice."""


@tool
def execute_refund(order: str) -> str:
    """Refund an order."""
    REFUNDS[order] += 1
    return f"refunded {order}"


def support_model(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    """Refunds the order a user names ("refund A1"), then confirms; echoes anything else."""
    last = messages[-1]
    if last["role"] == "tool":
        return say(f"done: {last['content']}")
    text = last["content"] or ""
    if text.startswith("refund "):
        return call("execute_refund", order=text.removeprefix("refund "))
    return say(f"support heard: {text}")


def support() -> CompiledTeam:
    return Swarm([Agent("support", "Help customers.", tools=[execute_refund])]).compile()


def support_over_runs() -> CompiledTeam:
    """`support`, continuing as new after 20 events: past that by the end of the first turn,
    so a conversation of a few turns spans several runs."""
    team = support()
    team.spec.continue_as_new_after_events = 20
    return team


async def start(client: Client, task_queue: str, team: CompiledTeam) -> WorkflowHandle:
    """A conversation of `team` started as the Temporal client starts one (no first turn)."""
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=team.spec, single_turn=False),
        id=f"thread-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


async def said(client: Client, workflow_id: str) -> list[str]:
    """What the user and the team said in the thread, in order (tool steps left out)."""
    log = await client.get_workflow_handle(workflow_id).query(TeamWorkflow.transcript)
    return [m.content or "" for m in log if m.role in ("user", "assistant") and m.content]


async def send_turns(client: Client, workflow_id: str, *texts: str) -> None:
    """Send each turn in order, each answered before the next."""
    for text in texts:
        await send_turn(client, workflow_id, text)
