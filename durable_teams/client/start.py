"""Starting a conversation as our clients do (CLI, chat, demos, gateway): with its static
summary and the `Team` / `Task` search attributes that tell conversations apart in lists."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.connection import encrypted
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.labels import conversation_labels, static_summary
from durable_teams.workflows.state import ConversationInput, ConversationResult

log = logging.getLogger(__name__)

TASK_TIMEOUT = timedelta(seconds=30)
"""The workflow task timeout conversations start with (Temporal's default: 10 s); children and
continue-as-new runs keep it. While a local call runs the conversation's workflow task stays
open, and the SDK heartbeats it at 80 % of this: with 10 s, busy workers (two on two cores, 500
conversations) had workflow tasks time out in 6 and 10 of 20 sampled conversations, and each
timeout runs the local calls of that task again. The costs, with local calls only: a worker
killed in the middle of one hands its conversations over after up to this long, not 10 s; and
a query sent in the middle of a turn waits for the next heartbeat, up to 24 s, not 8 s."""


async def start_conversation(
    client: Client, team: str, inp: ConversationInput, **options: Any
) -> WorkflowHandle[TeamWorkflow, ConversationResult]:
    """`client.start_workflow(TeamWorkflow.run, inp, ...)` labelled with `team` and the task,
    with a `TASK_TIMEOUT` workflow task timeout unless `options` name one, and `team` in its
    memo (where the gateway, the inbox and the MCP and A2A doors read whose thread it is)
    unless `options`' memo names it.
    A namespace without one of our search attributes registered (set up by an older release, a
    managed one; a worker registers them when it may) gets the conversation without it, not an
    error."""
    options.setdefault("task_timeout", TASK_TIMEOUT)
    options["memo"] = {"team": team} | dict(options.get("memo") or {})
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
