"""Starting a conversation as our clients do (CLI, chat, demos, gateway): with its static
summary and the `Team` / `Task` search attributes that tell conversations apart in lists."""

from __future__ import annotations

import logging
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.runtime import encrypted
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.labels import conversation_labels, static_summary
from durable_teams.workflows.state import ConversationInput, ConversationResult

log = logging.getLogger(__name__)


async def start_conversation(
    client: Client, team: str, inp: ConversationInput, **options: Any
) -> WorkflowHandle[TeamWorkflow, ConversationResult]:
    """`client.start_workflow(TeamWorkflow.run, inp, ...)` labelled with `team` and the task.
    A server without our search attributes registered (set up by an older release; a worker
    registers them when it starts) gets the conversation without them, not an error."""
    task = inp.task
    summary = static_summary(team, task)
    try:
        return await client.start_workflow(
            TeamWorkflow.run, inp, static_summary=summary,
            search_attributes=conversation_labels(team, task, encrypted(client)), **options)
    except RPCError as err:
        if err.status != RPCStatusCode.INVALID_ARGUMENT or "search attribute" not in err.message.lower():
            raise
        log.warning("starting without the Team/Task search attributes: %s", err.message)
        return await client.start_workflow(TeamWorkflow.run, inp, static_summary=summary, **options)
