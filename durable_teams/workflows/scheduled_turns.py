"""A turn a schedule sends: the workflow a Temporal Schedule starts at each firing of a cron
(the LangGraph door's crons, durable_teams/gateway/doors/langgraph/langgraph_crons.py).

A thread's cron (`crons.create_for_thread`) posts the turn to the thread by signal
(`post_message`, queued behind the thread's other turns) under an id of its own workflow's id,
so a firing retried posts it once, and ends: a schedule can start workflows, not signal them.

A cron with a webhook (`webhook=`) has its firing made by an activity (`fire_cron`,
durable_teams/activities/cron_firings.py), which learns the run's turn: the thread's turn
submitted by its update (a thread's cron), or a thread of its own started with the cron's
message as its task (an assistant's cron). It then starts the run's `RunWebhookWorkflow`
(durable_teams/workflows/run_webhooks.py), which tells the URL once the run ends, and ends
itself at once (a firing that waited for its run would make the schedule skip the next)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.workflow import ParentClosePolicy

from .push_targets import from_the_start
from .run_webhooks import RunWebhookWorkflow, WebhookInput
from .state import ConversationInput, UserTurn
from .wire_base import Wire, left_out_when_unset


class CronWebhook(Wire):
    """Where a cron's runs are told when each ends, and how (the gateway's choices)."""

    url: str
    assistant_id: str
    run_id: str = "t{turn}"
    """The run's id, from its turn's number (the door's naming)."""
    allow_private: bool = False
    retry_seconds: float = 1.0
    attempts: int = 8
    poll_seconds: float = 1.0
    tenant_prefix: str | None = left_out_when_unset()
    """Left out of the thread's id in the webhook (a tenant's thread ids are its own)."""


class ScheduledTurn(Wire):
    """The thread a firing talks to and what it says (`thread` "": an assistant's cron, whose
    firings each start a thread, `start`, with `memo`; only with a webhook)."""

    thread: str = ""
    text: str
    webhook: CronWebhook | None = left_out_when_unset()
    start: ConversationInput | None = left_out_when_unset()
    memo: dict[str, Any] | None = left_out_when_unset()
    task_timeout_seconds: float | None = left_out_when_unset()
    """The started thread's workflow task timeout (None: the server's default)."""


class Firing(Wire):
    """One firing of a cron with a webhook, for `fire_cron`: its workflow's id, the turn's id."""

    id: str
    turn_id: str
    turn: ScheduledTurn
    task_queue: str


class Fired(Wire):
    """The run a firing began: its thread and turn (`refused`: why there is none)."""

    thread: str = ""
    turn: int = 0
    refused: str = ""


@workflow.defn
class ScheduledTurnWorkflow:
    @workflow.run
    async def run(self, turn: ScheduledTurn) -> str:
        """Posts the turn; returns its turn id."""
        info = workflow.info()
        turn_id = "cron-" + hashlib.sha256(info.workflow_id.encode()).hexdigest()[:32]
        if turn.webhook is None:
            await workflow.get_external_workflow_handle(turn.thread).signal(
                "post_message", UserTurn(text=turn.text, turn_id=turn_id, sender="cron"))
            return turn_id
        try:
            fired = await workflow.execute_activity(
                "fire_cron", Firing(id=info.workflow_id, turn_id=turn_id, turn=turn, task_queue=info.task_queue),
                result_type=Fired, start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1),
                                         maximum_attempts=20),
                summary="fire the cron")
        except ActivityError as err:
            return f"not fired: {getattr(err.cause, 'message', None) or err.cause or err}"[:300]
        if fired.refused:
            return f"not fired: {fired.refused}"[:300]
        hook = turn.webhook
        await workflow.start_child_workflow(
            RunWebhookWorkflow.run, WebhookInput(
                thread=fired.thread, turn=fired.turn, run_id=hook.run_id.format(turn=fired.turn),
                shown_thread=fired.thread.removeprefix(hook.tenant_prefix) if hook.tenant_prefix else None,
                assistant_id=hook.assistant_id, url=hook.url, allow_private=hook.allow_private,
                retry_seconds=hook.retry_seconds, attempts=hook.attempts, poll_seconds=hook.poll_seconds,
                last=from_the_start()),
            id=f"{info.workflow_id}-webhook", parent_close_policy=ParentClosePolicy.ABANDON)
        return turn_id
