"""Starting a conversation as our clients do (CLI, chat, demos, gateway): with its static
summary and the `Team` / `Task` search attributes that tell conversations apart in lists."""

from __future__ import annotations

import logging
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.connection import encrypted
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.labels import conversation_labels, static_summary
from durable_teams.workflows.state import ConversationInput, ConversationResult

log = logging.getLogger(__name__)


async def start_conversation(
    client: Client, team: str, inp: ConversationInput, **options: Any
) -> WorkflowHandle[TeamWorkflow, ConversationResult]:
    """`client.start_workflow(TeamWorkflow.run, inp, ...)` labelled with `team` and the task.
    A namespace without one of our search attributes registered (set up by an older release, a
    managed one; a worker registers them when it may) gets the conversation without it, not an
    error."""
    task = inp.task
    summary = static_summary(team, task)
    labels = list(conversation_labels(team, task, encrypted(client)))
    while True:
        try:
            return await client.start_workflow(
                TeamWorkflow.run, inp, static_summary=summary,
                search_attributes=TypedSearchAttributes(labels), **options)
        except RPCError as err:
            if (not labels or err.status != RPCStatusCode.INVALID_ARGUMENT
                    or "search attribute" not in err.message.lower()):
                raise
            # the server names the one it lacks: start with the others (Team without Task, say)
            named = [p for p in labels if err.message.rstrip(".").endswith(f" {p.key.name}")]
            log.warning("starting without the %s search attribute%s: %s", "/".join(
                p.key.name for p in named or labels), "" if len(named) == 1 else "s", err.message)
            labels = [p for p in labels if p not in named] if named else []
