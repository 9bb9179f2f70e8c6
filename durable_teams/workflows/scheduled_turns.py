"""A turn a schedule sends to a thread: the workflow a Temporal Schedule starts at each firing
of a thread's cron (the LangGraph door's `crons.create_for_thread`,
durable_teams/gateway/doors/langgraph/langgraph_crons.py). It posts the turn to the thread by signal
(`post_message`, queued behind the thread's other turns) under an id of its own workflow's id,
so a firing retried posts it once, and ends: a schedule can start workflows, not signal them."""

from __future__ import annotations

import hashlib

from temporalio import workflow

from .messages import Wire
from .state import UserTurn


class ScheduledTurn(Wire):
    """The thread a firing talks to and what it says."""

    thread: str
    text: str


@workflow.defn
class ScheduledTurnWorkflow:
    @workflow.run
    async def run(self, turn: ScheduledTurn) -> str:
        """Posts the turn; returns its turn id."""
        turn_id = "cron-" + hashlib.sha256(workflow.info().workflow_id.encode()).hexdigest()[:32]
        await workflow.get_external_workflow_handle(turn.thread).signal(
            "post_message", UserTurn(text=turn.text, turn_id=turn_id, sender="cron"))
        return turn_id
